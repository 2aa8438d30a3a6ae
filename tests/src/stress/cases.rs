//! The suites of cases: `quick` (the test suite's), `ci` (CI's: at least 2 GiB through the
//! default configuration, then every feature switch), and `soak` (random cases).

use super::{Case, Transport};
use crate::Rng;

/// The feature switches `RUNTIME_DISABLE` takes.
pub const SWITCHES: [&str; 7] = [
    "registered_ring_fd",
    "no_sqarray",
    "min_timeout",
    "recv_multishot",
    "recv_bundle",
    "recv_incremental",
    "direct_descriptors",
];

/// The read path's rings a case may run on: the default (1024 x 16 KiB, grown from 16
/// buffers as receives find it empty), a small one that grows from 16 to 64 buffers of
/// 4 KiB, and a tiny one (16 x 1 KiB) that runs dry all the time.
pub const RINGS: [(&str, Option<(u16, u32)>); 3] = [
    ("default ring", None),
    ("growing 64x4K ring", Some((64, 4096))),
    ("tiny 16x1K ring", Some((16, 1024))),
];

/// One case.
#[allow(clippy::too_many_arguments)]
fn case(
    disable: &[&'static str],
    ring: usize,
    transport: Transport,
    conns: u32,
    bytes_per_conn: u64,
    max_write: usize,
    seed: u64,
) -> Case {
    let features = match disable.len() {
        0 => "all features".to_string(),
        n if n == SWITCHES.len() => "every feature off".to_string(),
        _ => format!("-{}", disable.join(",-")),
    };
    Case {
        name: format!("{transport:?} {features}, {}", RINGS[ring].0),
        disable: disable.to_vec(),
        ring: RINGS[ring].1,
        transport,
        conns,
        bytes_per_conn,
        max_write,
        seed,
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// A few seconds of cases for `cargo test` (a debug build): the default configuration on
/// each transport, the tiny ring, and every feature off.
pub fn quick(seed: u64) -> Vec<Case> {
    let m = MIB as usize;
    vec![
        case(&[], 0, Transport::Tcp, 200, 512 * KIB, m, seed),
        case(&[], 0, Transport::Unix, 100, 256 * KIB, m, seed ^ 1),
        case(&[], 0, Transport::Tls, 20, 256 * KIB, m, seed ^ 2),
        case(&[], 2, Transport::Tcp, 100, 128 * KIB, 64 * 1024, seed ^ 3),
        case(&SWITCHES, 0, Transport::Tcp, 100, 128 * KIB, m, seed ^ 4),
    ]
}

/// CI's suite: 2 GiB and more through the default configuration (TCP), the default on Unix
/// and TLS, the default on each ring, each feature switch alone off, all off, and three
/// other combinations drawn from the seed.
pub fn ci(seed: u64) -> Vec<Case> {
    let m = MIB as usize;
    let mut rng = Rng::new(seed);
    let mut s = rng.next_u64();
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        s
    };
    let mut cases = vec![
        case(&[], 0, Transport::Tcp, 512, 4 * MIB, m, next()),
        case(&[], 0, Transport::Unix, 500, MIB, m, next()),
        case(&[], 0, Transport::Tls, 100, MIB, m, next()),
        case(&[], 1, Transport::Tcp, 500, 512 * KIB, m, next()),
        case(&[], 2, Transport::Tcp, 500, 128 * KIB, m, next()),
        case(&[], 2, Transport::Unix, 200, 128 * KIB, m, next()),
    ];
    for switch in SWITCHES {
        cases.push(case(
            &[switch],
            0,
            Transport::Tcp,
            500,
            512 * KIB,
            m,
            next(),
        ));
    }
    cases.push(case(
        &SWITCHES,
        0,
        Transport::Tcp,
        500,
        512 * KIB,
        m,
        next(),
    ));
    cases.push(case(
        &SWITCHES,
        2,
        Transport::Unix,
        200,
        128 * KIB,
        m,
        next(),
    ));
    for _ in 0..3 {
        cases.push(random_case(&mut rng, 500, 256 * KIB));
    }
    cases
}

/// A case drawn at random: a subset of switches off, a ring, a transport.
pub fn random_case(rng: &mut Rng, conns: u32, bytes_per_conn: u64) -> Case {
    let mut disable = Vec::new();
    for switch in SWITCHES {
        if rng.one_in(3) {
            disable.push(switch);
        }
    }
    let ring = rng.below(RINGS.len() as u64) as usize;
    let transport = match rng.below(5) {
        0 => Transport::Unix,
        1 => Transport::Tls,
        _ => Transport::Tcp,
    };
    let conns = if transport == Transport::Tls {
        conns / 5
    } else {
        conns
    };
    let seed = rng.next_u64();
    case(
        &disable,
        ring,
        transport,
        conns,
        bytes_per_conn,
        MIB as usize,
        seed,
    )
}
