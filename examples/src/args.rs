//! Command-line flags by hand: `--name value`, `--name=value`, boolean `--name`, and
//! positional arguments; `-h`/`--help` prints the usage and exits 0, a bad flag prints the
//! error and the usage and exits 2.

use std::collections::HashMap;
use std::fmt::Display;
use std::process::exit;
use std::str::FromStr;

/// Parsed flags and positional arguments.
#[derive(Debug)]
pub struct Args {
    usage: &'static str,
    values: HashMap<String, String>,
    positional: Vec<String>,
}

impl Args {
    /// Parses the process's arguments. `takes_value` names the flags (without `--`) that
    /// take a value; `switches` the boolean ones. Exits on `--help` or an unknown flag.
    pub fn parse(usage: &'static str, takes_value: &[&str], switches: &[&str]) -> Args {
        Args::parse_from(usage, takes_value, switches, std::env::args().skip(1))
    }

    /// As [`parse`](Args::parse), from `args` (e.g. the process's arguments with short
    /// flags rewritten to long ones).
    pub fn parse_from(
        usage: &'static str,
        takes_value: &[&str],
        switches: &[&str],
        args: impl IntoIterator<Item = String>,
    ) -> Args {
        match Args::from_iter(usage, takes_value, switches, args) {
            Ok(Some(args)) => args,
            Ok(None) => {
                print!("{usage}");
                exit(0);
            }
            Err(e) => Args::fail(usage, e),
        }
    }

    /// Parses `args`; `Ok(None)` for `--help`.
    ///
    /// # Errors
    /// An unknown flag, or a flag that needs a value and has none.
    pub fn from_iter(
        usage: &'static str,
        takes_value: &[&str],
        switches: &[&str],
        args: impl IntoIterator<Item = String>,
    ) -> Result<Option<Args>, String> {
        let mut out = Args {
            usage,
            values: HashMap::new(),
            positional: Vec::new(),
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "-h" || arg == "--help" {
                return Ok(None);
            }
            let Some(flag) = arg.strip_prefix("--") else {
                out.positional.push(arg);
                continue;
            };
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (flag, None),
            };
            if takes_value.contains(&name) {
                let value = match inline.or_else(|| args.next()) {
                    Some(v) => v,
                    None => return Err(format!("--{name} needs a value")),
                };
                out.values.insert(name.to_string(), value);
            } else if switches.contains(&name) && inline.is_none() {
                out.values.insert(name.to_string(), String::new());
            } else {
                return Err(format!("unknown flag --{name}"));
            }
        }
        Ok(Some(out))
    }

    /// The value of `--name`, parsed, or `default` when absent; exits 2 if it does not parse.
    pub fn value<T: FromStr>(&self, name: &str, default: T) -> T
    where
        T::Err: Display,
    {
        match self.values.get(name) {
            None => default,
            Some(v) => v
                .parse()
                .unwrap_or_else(|e| Args::fail(self.usage, format!("--{name} {v:?}: {e}"))),
        }
    }

    /// The value of `--name`, parsed, if given; exits 2 if it does not parse.
    pub fn optional<T: FromStr>(&self, name: &str) -> Option<T>
    where
        T::Err: Display,
    {
        self.values.get(name).map(|v| {
            v.parse()
                .unwrap_or_else(|e| Args::fail(self.usage, format!("--{name} {v:?}: {e}")))
        })
    }

    /// The value of `--name` as given, if given.
    pub fn string(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Whether the switch `--name` was given.
    pub fn switch(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// The positional arguments, in order.
    pub fn positional(&self) -> &[String] {
        &self.positional
    }

    /// Prints `msg` and the usage to stderr and exits 2.
    pub fn usage_error(&self, msg: impl Display) -> ! {
        Args::fail(self.usage, msg)
    }

    fn fail(usage: &str, msg: impl Display) -> ! {
        eprint!("error: {msg}\n\n{usage}");
        exit(2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        Args::from_iter(
            "usage\n",
            &["port"],
            &["verbose"],
            args.iter().map(|s| s.to_string()),
        )
    }

    #[test]
    fn flags_and_positionals() {
        let a = parse(&["--port", "80", "x", "--verbose"]).unwrap().unwrap();
        assert_eq!(a.value("port", 0u16), 80);
        assert!(a.switch("verbose"));
        assert_eq!(a.positional(), ["x"]);
        let a = parse(&["--port=81"]).unwrap().unwrap();
        assert_eq!(a.value("port", 0u16), 81);
        assert_eq!(a.value("missing", 7u16), 7);
        assert_eq!(a.optional::<u16>("port"), Some(81));
        assert_eq!(a.optional::<u16>("missing"), None);
        assert_eq!(a.string("port"), Some("81"));
    }

    #[test]
    fn help_and_errors() {
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["--nope"]).is_err());
        assert!(parse(&["--port"]).is_err());
        assert!(parse(&["--verbose=1"]).is_err());
    }
}
