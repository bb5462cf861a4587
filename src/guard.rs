//! Checks every append must pass, whatever its kind.

use crate::error::{Error, Result};
use crate::events::Event;
use crate::secrets;

/// Refuses an event any of whose strings looks like a credential (rule
/// FREEZE-2; the `secrets` row of the verdict). The message names the field
/// and the shape, never the value.
pub fn check_event(event: &Event) -> Result<()> {
    // Fast path: most events carry no credential shape at all.
    if !event.any_string(&mut |s| secrets::scan(s).is_some()) {
        return Ok(());
    }
    for (path, value) in event.strings() {
        if let Some(found) = secrets::scan(&value) {
            return Err(Error::Refused {
                rule: "FREEZE-2",
                message: format!(
                    "field {path} of {} looks like a credential ({}, {}); secrets are never stored, nothing was appended",
                    event.kind(),
                    found.shape,
                    secrets::describe_redacted(&value)
                ),
            });
        }
    }
    Ok(())
}
