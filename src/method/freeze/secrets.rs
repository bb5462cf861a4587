//! FREEZE-2 over what leaves or enters the ledger besides the manifest:
//! an evidence file recorded by hash must be sanitized, and a publication
//! bundle is written only when its scan finds no credential shape. The
//! scanner is `schema::secrets`; these decide, naming file, line and shape
//! and never the value.

use crate::error::Result;
use crate::method::refuse;
use crate::schema::rule::Rule;

/// FREEZE-2: `text` (the file `shown`) holds no line shaped like a
/// credential; the first one found is refused by its line and shape.
pub fn sanitized(shown: &str, text: &str) -> Result<()> {
    for (i, line) in text.lines().enumerate() {
        if let Some(f) = crate::schema::secrets::scan(line) {
            return Err(refuse(
                Rule::Freeze2,
                format!(
                    "{shown} line {}: looks like a credential ({}); evidence must be sanitized, nothing was appended",
                    i + 1,
                    f.shape
                ),
            ));
        }
    }
    Ok(())
}

/// FREEZE-2: a bundle whose scan named `findings` (each `file line N
/// (shape)`) is not written.
pub fn bundle_clean(findings: &[String]) -> Result<()> {
    if findings.is_empty() {
        return Ok(());
    }
    Err(refuse(
        Rule::Freeze2,
        format!(
            "the secret scan found credential shapes in the bundle, nothing was written: {}",
            crate::method::verdict::name_some(findings)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn a_credential_shape_is_refused_by_line_and_shape_never_value() {
        let key = format!("{}{}", "AKIA", "Q3EGRXK2VBN7TW5Z");
        assert!(
            sanitized("f.log", "one\ntwo\n").is_ok(),
            "FREEZE-2: clean text passes"
        );
        let e = sanitized("f.log", &format!("one\nkey {key}\n")).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Refused {
                    rule: Rule::Freeze2,
                    ..
                }
            ),
            "FREEZE-2: {e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("f.log line 2: looks like a credential (aws_access_key_id)"),
            "{msg}"
        );
        assert!(!msg.contains(&key), "FREEZE-2: the value is never echoed");
        assert!(
            bundle_clean(&[]).is_ok(),
            "FREEZE-2: a clean bundle is written"
        );
        let named = ["r.md line 2 (aws_access_key_id)".to_string()];
        assert!(bundle_clean(&named)
            .unwrap_err()
            .to_string()
            .contains("r.md line 2"));
    }
}
