//! Checks every append must pass, whatever its kind.

use crate::error::{Error, Result};
use crate::schema::events::Event;
use crate::schema::rule::Rule;
use crate::schema::secrets;

/// Refuses a record header whose actor or idempotency key looks like a
/// credential (FREEZE-2): the guard covers every stored string, not only
/// the payload. The message never echoes the value.
pub fn check_header(actor: &str, idempotency_key: Option<&str>) -> Result<()> {
    for (field, value) in [("actor", Some(actor)), ("idempotency_key", idempotency_key)] {
        if let Some(found) = value.and_then(secrets::scan) {
            return Err(Error::Refused {
                rule: Rule::Freeze2,
                message: format!(
                    "the record's {field} looks like a credential ({}, {}); secrets are never stored, nothing holding it was appended",
                    found.shape,
                    secrets::describe_redacted(value.unwrap_or_default())
                ),
            });
        }
    }
    Ok(())
}

/// Refuses a gate observation whose flag its own numbers contradict
/// (BIND-6), and an event any of whose strings looks like a credential (rule
/// FREEZE-2; the `secrets` row of the verdict). The message names the field
/// and the shape, never the value.
pub fn check_event(event: &Event) -> Result<()> {
    // BIND-6: a gate observation whose flag its own numbers contradict.
    if let Some(why) = crate::schema::observation::flag_contradiction(event) {
        return Err(Error::Refused {
            rule: Rule::Bind6,
            message: format!(
                "{}: {why}; an observation counts from its numbers, nothing was appended",
                event.kind()
            ),
        });
    }
    // Fast path: most events carry no credential shape at all.
    if !event.any_string(&mut |s| secrets::scan(s).is_some()) {
        return Ok(());
    }
    for (path, value) in event.strings() {
        if let Some(found) = secrets::scan(&value) {
            return Err(Error::Refused {
                rule: Rule::Freeze2,
                message: format!(
                    "field {path} of {} looks like a credential ({}, {}); secrets are never stored, nothing holding it was appended",
                    event.kind(),
                    found.shape,
                    secrets::describe_redacted(&value)
                ),
            });
        }
    }
    Ok(())
}
