//! How the workspace's binaries (`kx`, `boot`) report a usage error: clap's message on one
//! line, without its usage block.
//!
//! Clap renders an error as the error, its tips, a blank line, the command's usage and a
//! pointer at `--help`. The binaries print their own one-line pointer at their help and exit
//! with [`crate::error::EXIT_USAGE`], so they take only what precedes the usage: the error
//! (`error: ` dropped) and its tips in parentheses, joined into one line. A message that
//! clap spreads over lines (the required arguments it lists under the error) stays whole.

/// Clap's message for `e` on one line: its error and tips, not the usage or the pointer at
/// `--help`.
#[must_use]
pub fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut parts: Vec<String> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if let Some(tip) = line.strip_prefix("tip: ") {
            parts.push(format!("({tip})"));
        } else if !line.is_empty() {
            parts.push(line.strip_prefix("error: ").unwrap_or(line).to_owned());
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction, Command};

    fn command() -> Command {
        Command::new("x")
            .arg(Arg::new("out").long("out").action(ArgAction::Set))
            .arg(Arg::new("dir").required(true))
    }

    fn error(args: &[&str]) -> String {
        one_line(&command().try_get_matches_from(args).unwrap_err())
    }

    #[test]
    fn the_error_and_its_tips_on_one_line() {
        assert_eq!(
            error(&["x", "d", "--outt", "f"]),
            "unexpected argument '--outt' found (a similar argument exists: '--out')"
        );
        assert_eq!(
            error(&["x"]),
            "the following required arguments were not provided: <dir>"
        );
        assert_eq!(
            error(&["x", "d", "--out"]),
            "a value is required for '--out <out>' but none was supplied"
        );
    }
}
