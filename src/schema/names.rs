//! Harbor trial names: the name benchledger gives a case
//! (`<task>__<group>-<trial>`, `-r01` for `replacement-01`), and back.
//!
//! Rendered by the method (the TrialConfig's `trial_name` and tags) and
//! parsed by evidence (a Harbor trial directory back to its case): one
//! definition both sides share.

use crate::error::{Error, Result};
use crate::schema::events::CaseRef;

pub use crate::limits::TRIAL_NAME_GROUP_BYTES_MAX;
pub use crate::limits::TRIAL_NAME_REPLACEMENT_MAX;
pub use crate::limits::TRIAL_NAME_TASK_BYTES_MAX;
pub use crate::limits::TRIAL_NAME_TRIAL_BYTES_MAX;

/// A benchledger case a trial name maps to: (task, group, case).
pub type MappedCase = (String, String, CaseRef);

/// The Harbor trial name benchledger gives a case:
/// `<task>__<group>-<trial>` for the original and
/// `<task>__<group>-<trial>-rNN` for `replacement-NN` (`-r01`), e.g.
/// `fix-git__control-t1`, `cancel-async-tasks__canary-1-c1-r01`.
///
/// `task` is the Terminal-Bench task name (pass `case.task`). Only parts
/// that [`check_trial_name_parts`] accepts give a name that
/// [`parse_trial_name`] maps back.
pub fn trial_name(task: &str, group: &str, case: &CaseRef) -> String {
    let mut name = format!("{task}__{group}-{}", case.trial);
    if case.replacement > 0 {
        name.push_str(&format!("-r{:02}", case.replacement));
    }
    name
}

/// Checks the parts of a trial name: `task` equals `case.task` and is 1 to
/// [`TRIAL_NAME_TASK_BYTES_MAX`] bytes of `[a-z0-9]` runs joined by single
/// `-`, `_` or `.`; `group` is 1 to [`TRIAL_NAME_GROUP_BYTES_MAX`] bytes of
/// `[a-z0-9]` runs joined by single `-`; the trial identity is 1 to
/// [`TRIAL_NAME_TRIAL_BYTES_MAX`] bytes of `[a-z0-9]` and not of the form
/// `r` + two digits (the replacement suffix); the replacement is at most
/// [`TRIAL_NAME_REPLACEMENT_MAX`].
pub fn check_trial_name_parts(task: &str, group: &str, case: &CaseRef) -> Result<()> {
    if task != case.task {
        return Err(Error::input(format!(
            "trial name: task {} differs from the case's task {}",
            shown(task),
            shown(&case.task)
        )));
    }
    if !valid_task(task) {
        return Err(Error::input(format!(
            "trial name: task {} is not 1 to {TRIAL_NAME_TASK_BYTES_MAX} bytes of [a-z0-9] runs \
             joined by single -, _ or .",
            shown(task)
        )));
    }
    if !valid_group(group) {
        return Err(Error::input(format!(
            "trial name: group {} is not 1 to {TRIAL_NAME_GROUP_BYTES_MAX} bytes of [a-z0-9] runs \
             joined by single -",
            shown(group)
        )));
    }
    if !valid_trial(&case.trial) {
        return Err(Error::input(format!(
            "trial name: trial identity {} is not 1 to {TRIAL_NAME_TRIAL_BYTES_MAX} bytes of \
             [a-z0-9], or looks like a replacement suffix rNN",
            shown(&case.trial)
        )));
    }
    if case.replacement > TRIAL_NAME_REPLACEMENT_MAX {
        return Err(Error::input(format!(
            "trial name: replacement {} is above {TRIAL_NAME_REPLACEMENT_MAX}",
            case.replacement
        )));
    }
    Ok(())
}

/// The case a trial name denotes under benchledger's scheme (see
/// [`trial_name`]): `(task, group, case)`. `None` for any other name,
/// including Harbor's default `<task>__<7-char shortuuid>` names, which do
/// not map to a case. For every name it accepts,
/// `trial_name(task, group, case)` gives the name back exactly.
pub fn parse_trial_name(name: &str) -> Option<MappedCase> {
    let (task, rest) = name.split_once("__")?;
    if !valid_task(task) {
        return None;
    }
    let (rest, replacement) = match rest.rsplit_once('-') {
        Some((head, last)) => match replacement_suffix(last) {
            Some(r) => (head, r),
            None => (rest, 0),
        },
        None => (rest, 0),
    };
    let (group, trial) = rest.rsplit_once('-')?;
    if !valid_group(group) || !valid_trial(trial) {
        return None;
    }
    Some((
        task.to_string(),
        group.to_string(),
        CaseRef {
            task: task.to_string(),
            trial: trial.to_string(),
            replacement,
        },
    ))
}

/// `rNN` with NN in 01..=99.
fn replacement_suffix(s: &str) -> Option<u8> {
    let digits = s.strip_prefix('r')?;
    if digits.len() != 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u8>().ok().filter(|n| *n >= 1)
}

fn lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// Runs of `[a-z0-9]` joined by single separators from `seps`.
fn runs_joined(s: &str, seps: &[u8], max: usize) -> bool {
    if s.is_empty() || s.len() > max {
        return false;
    }
    let mut prev_sep = true;
    for b in s.bytes() {
        if lower_alnum(b) {
            prev_sep = false;
        } else if seps.contains(&b) && !prev_sep {
            prev_sep = true;
        } else {
            return false;
        }
    }
    !prev_sep
}

fn valid_task(s: &str) -> bool {
    runs_joined(s, b"-_.", TRIAL_NAME_TASK_BYTES_MAX)
}

fn valid_group(s: &str) -> bool {
    runs_joined(s, b"-", TRIAL_NAME_GROUP_BYTES_MAX)
}

fn valid_trial(s: &str) -> bool {
    let looks_like_suffix =
        s.len() == 3 && s.starts_with('r') && s.bytes().skip(1).all(|b| b.is_ascii_digit());
    runs_joined(s, b"", TRIAL_NAME_TRIAL_BYTES_MAX) && !looks_like_suffix
}

/// A part as an error shows it: quoted, or only its shape when it looks
/// like a credential, or only its length when it is longer than any part a
/// name may hold.
fn shown(part: &str) -> String {
    if crate::schema::secrets::scan(part).is_some() {
        return crate::schema::secrets::describe_redacted(part);
    }
    if part.len() > TRIAL_NAME_TASK_BYTES_MAX {
        return format!("of {} bytes", part.len());
    }
    format!("{part:?}")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn case(task: &str, trial: &str, replacement: u8) -> CaseRef {
        CaseRef {
            task: task.into(),
            trial: trial.into(),
            replacement,
        }
    }

    #[test]
    fn trial_names_of_the_scheme() {
        let c = case("fix-git", "t1", 0);
        assert_eq!(trial_name("fix-git", "control", &c), "fix-git__control-t1");
        let r = case("cancel-async-tasks", "c1", 1);
        assert_eq!(
            trial_name("cancel-async-tasks", "canary-1", &r),
            "cancel-async-tasks__canary-1-c1-r01"
        );
        assert_eq!(
            parse_trial_name("cancel-async-tasks__canary-1-c1-r01"),
            Some(("cancel-async-tasks".into(), "canary-1".into(), r))
        );
        assert_eq!(
            parse_trial_name("fix-git__r1-t5"),
            Some(("fix-git".into(), "r1".into(), case("fix-git", "t5", 0)))
        );
        assert_eq!(
            parse_trial_name("fix-git__r01-t1-r01"),
            Some(("fix-git".into(), "r01".into(), case("fix-git", "t1", 1)))
        );
        // a trial identity `r1` is not a suffix (suffixes are r + two digits)
        assert_eq!(
            parse_trial_name("fix-git__r1-t1-r1"),
            Some(("fix-git".into(), "r1-t1".into(), case("fix-git", "r1", 0)))
        );
        // outside the scheme: harbor defaults and near misses
        for name in [
            "fix-git__Xk3pQ9a",
            "fix-git__abc1234",
            "fix-git",
            "fix-git__",
            "__r1-t1",
            "fix-git__r1-",
            "fix-git__-t1",
            "fix-git__r1-t1-r00",
            "fix-git__r1-r01",
            "fix-git__r1-T1",
            "Fix-git__r1-t1",
            "fix--git__r1-t1",
            "fix-git___r1-t1",
            "fix-git__r1--t1",
            "fix-git__r1-t1-r01-r01",
        ] {
            assert_eq!(parse_trial_name(name), None, "{name}");
        }
        assert!(check_trial_name_parts("fix-git", "control", &c).is_ok());
        let refuse = |task: &str, group: &str, c: &CaseRef| {
            check_trial_name_parts(task, group, c)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refuse("regex-log", "control", &c),
            "trial name: task \"regex-log\" differs from the case's task \"fix-git\""
        );
        assert!(
            refuse("fix-git", "Control", &c).starts_with("trial name: group \"Control\" is not")
        );
        assert!(refuse("fix-git", "control", &case("fix-git", "r01", 0))
            .starts_with("trial name: trial identity \"r01\""));
        assert_eq!(
            refuse("fix-git", "control", &case("fix-git", "t1", 100)),
            "trial name: replacement 100 is above 99"
        );
        assert!(refuse("fix__git", "control", &case("fix__git", "t1", 0))
            .starts_with("trial name: task \"fix__git\" is not"));
    }

    fn task_strategy() -> impl Strategy<Value = String> {
        "[a-z0-9]{1,8}([-_.][a-z0-9]{1,8}){0,3}"
    }

    fn group_strategy() -> impl Strategy<Value = String> {
        "[a-z0-9]{1,6}(-[a-z0-9]{1,6}){0,2}"
    }

    fn trial_strategy() -> impl Strategy<Value = String> {
        "[a-z0-9]{1,5}".prop_filter("not a replacement suffix", |t| {
            !(t.len() == 3 && t.starts_with('r') && t[1..].bytes().all(|b| b.is_ascii_digit()))
        })
    }

    proptest! {
        #[test]
        fn trial_names_invert(task in task_strategy(), group in group_strategy(), trial in trial_strategy(), replacement in 0u8..=99) {
            let c = CaseRef { task: task.clone(), trial, replacement };
            prop_assert!(check_trial_name_parts(&task, &group, &c).is_ok());
            let name = trial_name(&task, &group, &c);
            prop_assert_eq!(parse_trial_name(&name), Some((task.clone(), group.clone(), c)));
        }

        #[test]
        fn accepted_names_render_back_exactly(name in "[a-z0-9_.r-]{0,10}__[a-z0-9r-]{0,14}") {
            if let Some((task, group, c)) = parse_trial_name(&name) {
                prop_assert!(check_trial_name_parts(&task, &group, &c).is_ok());
                prop_assert_eq!(trial_name(&task, &group, &c), name);
            }
        }


        #[test]
        fn the_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse_trial_name(&String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn long_or_secret_parts_are_not_echoed() {
        let long = "a".repeat(TRIAL_NAME_TASK_BYTES_MAX + 1);
        let err = check_trial_name_parts(&long, "control", &case(&long, "t1", 0))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("trial name: task of 129 bytes is not"),
            "{err}"
        );
        let key = format!("sk-proj-{}", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z".repeat(2));
        let err = check_trial_name_parts("fix-git", &key, &case("fix-git", "t1", 0))
            .unwrap_err()
            .to_string();
        assert!(!err.contains(&key) && err.contains("<redacted:"), "{err}");
    }
}
