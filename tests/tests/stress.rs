//! The stress suite's quick cases (`tests::stress::cases::quick`): the default read path
//! on TCP, Unix and TLS, the tiny ring and every feature off, with hundreds of connections,
//! random writes up to 1 MiB and every read and write API, every byte checked. CI runs the
//! full suite (2 GiB and more) with the `stress` binary; `SEED=n` replays a seed.

use tests::stress::cases;

#[test]
fn quick_cases_deliver_every_byte_to_its_own_connection() {
    tests::set_nofile_soft(20_000).ok();
    let seed = tests::seed_from_env(0x5EED_0025);
    let mut failures = Vec::new();
    for case in cases::quick(seed) {
        match case.run() {
            Ok(report) => eprintln!("ok   {report}"),
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "seed {seed:#x} (replay: SEED={seed:#x} cargo test -p tests --test stress):\n{}",
        failures.join("\n")
    );
}
