//! Name resolution: net's [`ToSocketAddrs`] and [`lookup_host`].
//!
//! An address is either numeric (a [`SocketAddr`], an IP address and a port, a numeric
//! `"ip:port"` string), parsed on the core with no system call, or a host name and a port,
//! which `getaddrinfo(3)` resolves. `getaddrinfo` blocks and io_uring has no op for it, so
//! the async paths ([`lookup_host`], `TcpStream::connect`, `UdpSocket::connect` and
//! `send_to`) run it on the runtime's blocking pool (`runtime::spawn_blocking`) while the
//! core goes on with its other tasks. The synchronous ones (`bind`, `corering_net::serve`) cannot
//! wait: they resolve a host name on the calling thread, as std does.
//!
//! The trait is sealed (as tokio's is): what it resolves to, and where, is this crate's
//! business, so that a numeric address can never be sent to the pool by mistake.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use runtime::ext::error_context;

/// An address to connect to, send to or bind: one or more [`SocketAddr`]s, or a host name
/// and a port to resolve.
///
/// Implemented, as tokio's trait is, for [`SocketAddr`], [`SocketAddrV4`], [`SocketAddrV6`],
/// `(IpAddr, u16)`, `(Ipv4Addr, u16)`, `(Ipv6Addr, u16)`, `&[SocketAddr]`, `str`, `String`,
/// `(&str, u16)`, `(String, u16)`, and references to any of them. It is sealed: it cannot
/// be implemented outside this crate.
///
/// Numeric forms (the socket-address types, an IP address and a port, a string such as
/// `"127.0.0.1:80"` or `"[::1]:80"`, or `("10.0.0.1", 80)`) are parsed on the calling core
/// without a system call. Anything else is a host name (`"example.com:80"`,
/// `("localhost", 8080)`), resolved with `getaddrinfo(3)`: on the runtime's blocking pool by
/// the async functions, on the calling thread by the synchronous ones (`bind`, `serve`).
/// A string without a port, or with a port that is not a number below 65536, is
/// `InvalidInput` at once.
pub trait ToSocketAddrs: sealed::ToSocketAddrsPriv {}

/// Resolves `host` to its socket addresses, as tokio's `lookup_host` does: a host name on
/// the runtime's blocking pool (`getaddrinfo(3)` never runs on the core, which goes on
/// running its other tasks), a numeric address on the core at once.
///
/// The addresses come in `getaddrinfo`'s order (the system's preference, RFC 6724). The
/// iterator is never empty: a name that resolves to no address is an error naming it.
///
/// # Errors
/// A malformed address (`InvalidInput`), a name that does not resolve (the kind `getaddrinfo`
/// gave, with the name in the message: `"resolving example.invalid:80: failed to lookup
/// address information: ..."`), or no address at all (`InvalidInput`).
///
/// # Panics
/// For a host name, outside a runtime (it needs the runtime's blocking pool).
///
/// ```
/// let rt = runtime::Runtime::new()?;
/// rt.block_on(async {
///     for addr in corering_net::lookup_host("localhost:8080").await? {
///         assert!(addr.ip().is_loopback());
///         assert_eq!(addr.port(), 8080);
///     }
///     let mut numeric = corering_net::lookup_host(("10.0.0.1", 53)).await?;
///     assert_eq!(numeric.next(), Some("10.0.0.1:53".parse().unwrap()));
///     Ok::<(), std::io::Error>(())
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn lookup_host<T: ToSocketAddrs>(
    host: T,
) -> io::Result<impl Iterator<Item = SocketAddr>> {
    resolve(&host).await
}

/// Resolves `addr`: a numeric address here, a host name on the blocking pool. Never empty.
pub(crate) async fn resolve<T: ToSocketAddrs + ?Sized>(addr: &T) -> io::Result<Addrs> {
    match addr.target(sealed::Internal) {
        Target::Ready(addrs) => addrs,
        Target::Lookup(host) => {
            let name = host.to_string();
            runtime::spawn_blocking(move || host.lookup())
                .await
                .map_err(|e| error_context(e.into(), format_args!("resolving {name}")))?
        }
    }
}

/// Resolves `addr` on this thread (a host name blocks it: for `bind` and `serve`, which are
/// synchronous). Never empty.
pub(crate) fn resolve_sync<T: ToSocketAddrs + ?Sized>(addr: &T) -> io::Result<Addrs> {
    match addr.target(sealed::Internal) {
        Target::Ready(addrs) => addrs,
        Target::Lookup(host) => host.lookup(),
    }
}

/// Calls `f` on each address `addr` resolves to ([`resolve_sync`]), in turn, until one
/// succeeds; else the last error.
pub(crate) fn each_addr<T>(
    addr: impl ToSocketAddrs,
    mut f: impl FnMut(SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = None;
    for a in resolve_sync(&addr)? {
        match f(a) {
            Ok(v) => return Ok(v),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| no_addresses("address")))
}

/// The error for a resolution that gave no address (`what`: the name or input).
pub(crate) fn no_addresses(what: impl fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("resolving {what}: could not resolve to any addresses"),
    )
}

/// The addresses an address resolved to, in order; never empty. Allocates only for more
/// than one.
#[derive(Debug, Clone)]
pub struct Addrs(AddrsInner);

#[derive(Debug, Clone)]
enum AddrsInner {
    One(Option<SocketAddr>),
    Many(std::vec::IntoIter<SocketAddr>),
}

impl Addrs {
    fn one(addr: SocketAddr) -> io::Result<Addrs> {
        Ok(Addrs(AddrsInner::One(Some(addr))))
    }

    /// `addrs`, or the no-address error naming `what` if there are none.
    fn many(addrs: Vec<SocketAddr>, what: impl fmt::Display) -> io::Result<Addrs> {
        if addrs.is_empty() {
            return Err(no_addresses(what));
        }
        Ok(Addrs(AddrsInner::Many(addrs.into_iter())))
    }

    /// The first address of the family of `local` (IPv4 or IPv6), else the first: where a
    /// datagram socket bound to `local` can send.
    pub(crate) fn pick_for(self, local: Option<SocketAddr>) -> Option<SocketAddr> {
        match (self.0, local) {
            (AddrsInner::One(a), _) => a,
            (AddrsInner::Many(all), Some(local)) => {
                let first = all.as_slice().first().copied();
                all.into_iter()
                    .find(|a| a.is_ipv4() == local.is_ipv4())
                    .or(first)
            }
            (AddrsInner::Many(mut all), None) => all.next(),
        }
    }
}

impl Iterator for Addrs {
    type Item = SocketAddr;

    fn next(&mut self) -> Option<SocketAddr> {
        match &mut self.0 {
            AddrsInner::One(a) => a.take(),
            AddrsInner::Many(all) => all.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            AddrsInner::One(a) => {
                let n = usize::from(a.is_some());
                (n, Some(n))
            }
            AddrsInner::Many(all) => all.size_hint(),
        }
    }
}

impl ExactSizeIterator for Addrs {}

/// What an address names: addresses parsed on the core, or a host name to resolve.
pub enum Target {
    /// Numeric: parsed (or rejected) on the core.
    Ready(io::Result<Addrs>),
    /// A host name, for `getaddrinfo(3)`.
    Lookup(Host),
}

/// A host name (not an IP address) and a port.
#[derive(Debug, Clone)]
pub struct Host {
    name: String,
    port: u16,
}

impl Host {
    /// Resolves the name with `getaddrinfo(3)` (through std), blocking this thread. Never
    /// empty; errors keep their kind and name the host.
    fn lookup(&self) -> io::Result<Addrs> {
        let addrs = std::net::ToSocketAddrs::to_socket_addrs(&(self.name.as_str(), self.port))
            .map_err(|e| error_context(e, format_args!("resolving {self}")))?
            .collect();
        Addrs::many(addrs, self)
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.port)
    }
}

/// `host` (an IP address, parsed here, or a host name) and `port`.
fn host_port(host: &str, port: u16) -> Target {
    // std's `(&str, u16)` does the same: an IP address is never handed to getaddrinfo.
    match host.parse::<IpAddr>() {
        Ok(ip) => Target::Ready(Addrs::one(SocketAddr::new(ip, port))),
        Err(_) => Target::Lookup(Host {
            name: host.to_owned(),
            port,
        }),
    }
}

/// An `InvalidInput` error about `input`.
fn invalid(input: &str, why: &str) -> Target {
    Target::Ready(Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("resolving {input}: {why}"),
    )))
}

mod sealed {
    use super::Target;

    /// The sealed half of [`ToSocketAddrs`](super::ToSocketAddrs).
    pub trait ToSocketAddrsPriv {
        /// What `self` names: addresses parsed here, or a host name to resolve.
        fn target(&self, _: Internal) -> Target;
    }

    /// Keeps [`ToSocketAddrsPriv::target`] uncallable outside this crate (a bound on the
    /// public trait brings its supertrait's methods into scope).
    #[derive(Debug, Clone, Copy)]
    pub struct Internal;
}

use sealed::{Internal, ToSocketAddrsPriv};

macro_rules! impl_addr {
    ($($ty:ty => |$self:ident| $target:expr;)*) => {$(
        impl ToSocketAddrs for $ty {}

        impl ToSocketAddrsPriv for $ty {
            fn target(&self, _: Internal) -> Target {
                let $self = self;
                $target
            }
        }
    )*};
}

impl_addr! {
    SocketAddr => |a| Target::Ready(Addrs::one(*a));
    SocketAddrV4 => |a| Target::Ready(Addrs::one((*a).into()));
    SocketAddrV6 => |a| Target::Ready(Addrs::one((*a).into()));
    (IpAddr, u16) => |a| Target::Ready(Addrs::one(SocketAddr::new(a.0, a.1)));
    (Ipv4Addr, u16) => |a| Target::Ready(Addrs::one(SocketAddr::new(a.0.into(), a.1)));
    (Ipv6Addr, u16) => |a| Target::Ready(Addrs::one(SocketAddr::new(a.0.into(), a.1)));
    &[SocketAddr] => |a| match a {
        [one] => Target::Ready(Addrs::one(*one)),
        all => Target::Ready(Addrs::many(all.to_vec(), "an empty address list")),
    };
    str => |s| str_target(s);
    String => |s| str_target(s);
    (&str, u16) => |a| host_port(a.0, a.1);
    (String, u16) => |a| host_port(&a.0, a.1);
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrsPriv for &T {
    fn target(&self, internal: Internal) -> Target {
        (**self).target(internal)
    }
}

/// `"ip:port"` (parsed here), or `"host:port"` (a host name to resolve), as std reads it.
fn str_target(s: &str) -> Target {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Target::Ready(Addrs::one(addr));
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return invalid(s, "invalid socket address");
    };
    let Ok(port) = port.parse::<u16>() else {
        return invalid(s, "invalid port value");
    };
    host_port(host, port)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready<T: ToSocketAddrs + ?Sized>(addr: &T) -> io::Result<Vec<SocketAddr>> {
        match addr.target(Internal) {
            Target::Ready(addrs) => addrs.map(Iterator::collect),
            Target::Lookup(host) => panic!("{host} was sent to getaddrinfo"),
        }
    }

    fn lookup<T: ToSocketAddrs + ?Sized>(addr: &T) -> String {
        match addr.target(Internal) {
            Target::Ready(addrs) => panic!("resolved on the core: {addrs:?}"),
            Target::Lookup(host) => host.to_string(),
        }
    }

    #[test]
    fn numeric_forms_parse_here() {
        let v4: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let v6: SocketAddr = "[::1]:443".parse().unwrap();
        let v4_only = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 80);
        let v6_only = SocketAddrV6::new(Ipv6Addr::LOCALHOST, 443, 0, 0);
        assert_eq!(ready(&v4).unwrap(), [v4]);
        assert_eq!(ready(&&v4).unwrap(), [v4]);
        assert_eq!(ready(&v4_only).unwrap(), [v4]);
        assert_eq!(ready(&v6_only).unwrap(), [v6]);
        assert_eq!(ready(&(v4.ip(), 80)).unwrap(), [v4]);
        assert_eq!(ready(&(Ipv4Addr::LOCALHOST, 80)).unwrap(), [v4]);
        assert_eq!(ready(&(Ipv6Addr::LOCALHOST, 443)).unwrap(), [v6]);
        assert_eq!(ready("127.0.0.1:80").unwrap(), [v4]);
        assert_eq!(ready(&"[::1]:443").unwrap(), [v6]);
        assert_eq!(ready(&String::from("[::1]:443")).unwrap(), [v6]);
        assert_eq!(ready(&&String::from("127.0.0.1:80")).unwrap(), [v4]);
        assert_eq!(ready(&("127.0.0.1", 80)).unwrap(), [v4]);
        assert_eq!(ready(&("::1", 443)).unwrap(), [v6]);
        assert_eq!(ready(&(String::from("::1"), 443)).unwrap(), [v6]);
        // Unbracketed IPv6 with a port: std hands the IP to getaddrinfo; it is numeric.
        assert_eq!(ready("::1:443").unwrap(), [v6]);
        let both = [v4, v6];
        assert_eq!(ready(&&both[..]).unwrap(), both);
        assert_eq!(ready(&&both[..1]).unwrap(), [v4]);
    }

    #[test]
    fn host_names_go_to_getaddrinfo() {
        assert_eq!(lookup("localhost:80"), "localhost:80");
        assert_eq!(lookup(&String::from("example.com:443")), "example.com:443");
        assert_eq!(lookup(&("localhost", 0)), "localhost:0");
        assert_eq!(lookup(&(String::from("a.b"), 1)), "a.b:1");
        // An IP address std does not parse (inet_aton's forms) is getaddrinfo's to read.
        assert_eq!(lookup("127.1:80"), "127.1:80");
    }

    #[test]
    fn malformed_is_invalid_input_naming_the_input() {
        for (input, why) in [
            ("not an address", "invalid socket address"),
            ("host:port", "invalid port value"),
            ("host:65536", "invalid port value"),
        ] {
            let err = ready(input).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert_eq!(err.to_string(), format!("resolving {input}: {why}"));
        }
        let err = ready(&&[][..]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("could not resolve"), "{err}");
        let err = resolve_sync("not an address").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn addrs_iterate_and_pick_the_socket_family() {
        let v4: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        let mut one = Addrs::one(v4).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one.next(), Some(v4));
        assert_eq!(one.len(), 0);
        assert_eq!(one.next(), None);
        let many = Addrs::many(vec![v6, v4], "x").unwrap();
        assert_eq!(many.len(), 2);
        assert_eq!(many.clone().pick_for(Some(v4)), Some(v4));
        assert_eq!(many.clone().pick_for(Some(v6)), Some(v6));
        assert_eq!(many.clone().pick_for(None), Some(v6));
        let only_v6 = Addrs::many(vec![v6, v6], "x").unwrap();
        assert_eq!(only_v6.pick_for(Some(v4)), Some(v6));
        assert_eq!(Addrs::one(v6).unwrap().pick_for(Some(v4)), Some(v6));
    }
}
