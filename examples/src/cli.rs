//! The command line of the example programs: `--flag value` pairs, and running inside a
//! rayon pool of a chosen size.

use std::str::FromStr;

/// Parsed `--flag value` arguments. Parsing stops the program with a message and exit
/// code 2 on `--help`, an unknown flag, a missing or malformed value.
#[derive(Debug)]
pub struct Args {
    usage: &'static str,
    values: Vec<(String, String)>,
}

impl Args {
    /// Reads the process arguments, accepting only the flags named in `usage` (every
    /// `--word` in it).
    pub fn parse(usage: &'static str) -> Self {
        match Self::parse_from(usage, std::env::args().skip(1)) {
            Ok(args) => args,
            Err(message) => exit(&message),
        }
    }

    /// [`parse`](Self::parse) over given arguments, reporting problems as values.
    pub fn parse_from(usage: &'static str, args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let known: Vec<&str> = usage
            .split(|c: char| !(c.is_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--"))
            .collect();
        let mut values = Vec::new();
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                return Err(usage.to_string());
            }
            if !known.contains(&flag.as_str()) {
                return Err(format!("unknown argument `{flag}`\n{usage}"));
            }
            let value = args
                .next()
                .ok_or_else(|| format!("{flag} needs a value\n{usage}"))?;
            values.push((flag, value));
        }
        Ok(Self { usage, values })
    }

    /// The value of `flag` (the last one given), parsed; `None` when absent.
    pub fn get<T: FromStr>(&self, flag: &str) -> Option<T>
    where
        T::Err: std::fmt::Display,
    {
        let (_, raw) = self.values.iter().rev().find(|(f, _)| f == flag)?;
        match raw.parse() {
            Ok(value) => Some(value),
            Err(e) => exit(&format!("{flag} {raw}: {e}\n{}", self.usage)),
        }
    }

    /// The value of `flag`, or `default`.
    pub fn get_or<T: FromStr>(&self, flag: &str, default: T) -> T
    where
        T::Err: std::fmt::Display,
    {
        self.get(flag).unwrap_or(default)
    }
}

/// Prints `message` and ends the program with exit code 2 (bad command line).
pub fn exit(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}

/// Runs `f` inside a rayon pool of `threads` threads (or rayon's default), passing the
/// pool's size.
pub fn with_threads<R: Send>(threads: Option<usize>, f: impl FnOnce(usize) -> R + Send) -> R {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(threads) = threads {
        pool = pool.num_threads(threads.max(1));
    }
    let pool = pool.build().expect("the thread pool starts");
    pool.install(|| f(pool.current_num_threads()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        Args::parse_from(
            "usage: demo [--frames N] [--seed N]",
            list.iter().map(|s| s.to_string()),
        )
    }

    #[test]
    fn known_flags_parse_and_unknown_ones_are_refused() {
        let parsed = args(&["--frames", "10", "--seed", "3", "--frames", "12"]).unwrap();
        assert_eq!(parsed.get::<u32>("--frames"), Some(12));
        assert_eq!(parsed.get_or::<u64>("--seed", 1), 3);
        assert_eq!(parsed.get::<u32>("--threads"), None);
        assert!(
            args(&["--threads", "2"])
                .unwrap_err()
                .contains("unknown argument `--threads`")
        );
        assert!(
            args(&["--frames"])
                .unwrap_err()
                .contains("--frames needs a value")
        );
        assert!(args(&["--help"]).unwrap_err().starts_with("usage: demo"));
    }
}
