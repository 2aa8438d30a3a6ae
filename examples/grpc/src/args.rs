//! A small `--flag value` command-line parser for the binaries.

use std::collections::HashMap;
use std::str::FromStr;

/// Parsed `--name value` pairs and `--name` switches.
#[derive(Debug)]
pub struct Args {
    usage: &'static str,
    values: HashMap<String, String>,
}

impl Args {
    /// Parses `std::env::args()`: `--name value` for each of `names`, `--name` alone for
    /// each of `switches`; `-h`/`--help` prints `usage` and exits 0; anything else prints it
    /// and exits 2.
    pub fn parse(usage: &'static str, names: &[&str], switches: &[&str]) -> Args {
        let mut values = HashMap::new();
        let mut it = std::env::args().skip(1);
        let args = Args {
            usage,
            values: HashMap::new(),
        };
        while let Some(arg) = it.next() {
            if arg == "-h" || arg == "--help" {
                print!("{usage}");
                std::process::exit(0);
            }
            let Some(name) = arg.strip_prefix("--") else {
                args.usage_error(format!("unexpected argument {arg:?}"));
            };
            if switches.contains(&name) {
                values.insert(name.to_owned(), String::new());
            } else if names.contains(&name) {
                let Some(value) = it.next() else {
                    args.usage_error(format!("--{name} needs a value"));
                };
                values.insert(name.to_owned(), value);
            } else {
                args.usage_error(format!("unknown option --{name}"));
            }
        }
        Args { usage, values }
    }

    /// `--name`'s value parsed, or `default`; a value that does not parse is a usage error.
    pub fn value<T: FromStr>(&self, name: &str, default: T) -> T
    where
        T::Err: std::fmt::Display,
    {
        match self.values.get(name) {
            None => default,
            Some(v) => v
                .parse()
                .unwrap_or_else(|e| self.usage_error(format!("--{name} {v:?}: {e}"))),
        }
    }

    /// Whether the switch `--name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// Prints `message` and the usage to stderr, and exits 2.
    pub fn usage_error(&self, message: impl std::fmt::Display) -> ! {
        eprintln!("error: {message}\n\n{}", self.usage);
        std::process::exit(2)
    }
}
