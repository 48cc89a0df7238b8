//! Shared by the targets: what every error must look like.

/// An error shown to a user is one line (the CLI prints it as `error: <message>`).
pub fn one_line(what: &str, message: &str) {
    assert!(!message.is_empty(), "{what}: empty error message");
    assert!(
        !message.contains('\n'),
        "{what}: multi-line error: {message}"
    );
}
