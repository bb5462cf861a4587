//! Temporary names beside a target: an import's staging ledger, an
//! export's partial file, a bundle's staging directory. Each name is unique
//! to its process and call (`.{name}.{tag}-{pid}-{random}`), so two
//! processes never share one and nothing unrelated (`a.partial`) is ever
//! touched; one that a process left behind (killed, or a second Ctrl-C) is
//! removed by the next run once that process is gone.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The directory a target lives in (`.` for a bare name).
fn parent_of(target: &Path) -> &Path {
    target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn name_of(target: &Path) -> Result<String> {
    target
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| Error::input(format!("{} has no file name", target.display())))
}

/// A fresh temporary name beside `target`, unique to this process and call:
/// `.{name}.{tag}-{pid}-{16 hex digits}`. Nothing is created.
pub fn temp_beside(target: &Path, tag: &str) -> Result<PathBuf> {
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce)
        .map_err(|e| Error::io("read randomness for a temporary name", e))?;
    Ok(parent_of(target).join(format!(
        ".{}.{tag}-{}-{}",
        name_of(target)?,
        std::process::id(),
        hex::encode(nonce)
    )))
}

/// Whether process `pid` may still run: its `/proc` entry exists, or there
/// is no `/proc` to ask (then its leftovers are kept).
fn alive(pid: u32) -> bool {
    let proc_dir = Path::new("/proc");
    !proc_dir.join("self").exists() || proc_dir.join(pid.to_string()).exists()
}

/// Removes the temporary names beside `target` with `tag` that a process
/// which no longer runs left behind (`temp_beside`'s form only); returns
/// what was removed. Failures to remove are left for the next run.
pub fn remove_stale(target: &Path, tag: &str) -> Vec<PathBuf> {
    let Ok(name) = name_of(target) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.{tag}-");
    let Ok(entries) = std::fs::read_dir(parent_of(target)) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().to_string();
        let Some(rest) = file.strip_prefix(&prefix) else {
            continue;
        };
        let Some((pid, nonce)) = rest.split_once('-') else {
            continue;
        };
        let ours = nonce.len() == 16 && nonce.bytes().all(|b| b.is_ascii_hexdigit());
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if !ours || alive(pid) {
            continue;
        }
        let path = e.path();
        let gone = match e.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if gone.is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_only_a_dead_processs_leftovers_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("a.jsonl");
        let (one, two) = (
            temp_beside(&target, "partial").unwrap(),
            temp_beside(&target, "partial").unwrap(),
        );
        assert_ne!(one, two, "one name per call");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let left = tmp
            .path()
            .join(format!(".a.jsonl.partial-{dead}-0123456789abcdef"));
        std::fs::create_dir_all(left.join("sub")).unwrap();
        let live = one.clone();
        std::fs::write(&live, "mine").unwrap();
        let unrelated = tmp.path().join("a.partial");
        std::fs::write(&unrelated, "keep").unwrap();
        assert_eq!(remove_stale(&target, "partial"), vec![left.clone()]);
        assert!(!left.exists() && live.exists() && unrelated.exists());
    }
}
