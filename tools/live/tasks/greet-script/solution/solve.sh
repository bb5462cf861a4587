#!/bin/bash
printf '#!/bin/bash\necho "Hello, $1!"\n' > /app/greet.sh
chmod +x /app/greet.sh
