//! What the crate's tests share: a real sluiced to test against.
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A sluiced of the build tree ($SLUICED, else ../../build/bin/sluiced), on a free loopback
/// port; killed when dropped.
pub struct Daemon {
    child: Child,
    pub address: String,
}

impl Daemon {
    pub fn start() -> Daemon {
        let binary = std::env::var("SLUICED").map(PathBuf::from).unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/bin/sluiced")
        });
        let mut child = Command::new(&binary)
            .args(["--listen=127.0.0.1:0", "--backend=cpu", "--cpu_memory=1G"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        // sluiced prints exactly one line once it serves (or exits, and the read ends).
        BufReader::new(stdout).read_line(&mut line).expect("sluiced's first line");
        let address = line
            .trim()
            .strip_prefix("sluiced listening on ")
            .unwrap_or_else(|| panic!("sluiced did not start: {line:?}"))
            .to_string();
        Daemon { child, address }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

