//! Issue 29, "fail closed at every boundary, round two": each shape that got
//! through, fed to the binary as a new user or an adversary would.

use super::Harness;

/// A fabricated AWS secret access key (40 base64 bytes), split so this file
/// holds no literal a secret scanner flags.
fn fake_aws_secret() -> String {
    format!("{}{}", "wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKE1")
}

#[test]
fn a_lone_aws_secret_in_a_note_is_refused_like_its_assignment() {
    // rule BIND-8, FREEZE-2
    let h = Harness::new();
    h.init();
    let before = h.head_bytes();
    let secret = fake_aws_secret();
    assert_eq!(secret.len(), 40);
    for text in [
        format!("AWS_SECRET_ACCESS_KEY={secret}"),
        format!("secret={secret}"),
        format!("Traceback: signing with secret {secret} for s3"),
    ] {
        let r = h.run(&["note", &text]);
        assert_eq!(
            r.code, 3,
            "BIND-8: a lone AWS secret is refused at append: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("aws_secret_access_key") && !r.stderr.contains(&secret),
            "BIND-8: the shape is named, the value never echoed: {}",
            r.stderr
        );
    }
    assert_eq!(h.head_bytes(), before, "a refusal appends nothing");
}
