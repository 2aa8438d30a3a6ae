//! Which buffers a CQE filled: [`Claim`], taken out of the ring as the driver reaps the
//! CQE, and the [`BufRing`] methods that hand them out.
//!
//! A CQE names its first buffer only; a bundle's other buffers follow it in ring order, and
//! an incremental ring's offset follows from the order the CQEs were posted in. Both are
//! read as the CQE is reaped, in the order the kernel posted them: later, after other
//! CQEs' buffers came back to the ring, the positions a bundle's buffers had may hold other
//! buffers (this is how one connection's bytes once reached another's reader).

use std::collections::VecDeque;
use std::fmt;

use super::ring::Inner;
use super::{BufRing, RingBuf};
use crate::driver::op::Cqe;

impl BufRing {
    /// The buffer the kernel filled for `cqe` (which must come from an op that selected from
    /// this ring), holding `cqe`'s result in bytes. `None` if the CQE carries no buffer (or,
    /// on an incremental ring, no bytes: the kernel kept the buffer). For a bundle's CQE
    /// use [`take_bundle`](BufRing::take_bundle); this gives its first buffer only (the
    /// rest go back to the ring).
    pub fn take(&self, cqe: &mut Cqe) -> Option<RingBuf> {
        let mut first = None;
        self.take_each(cqe, |b| {
            if first.is_none() {
                first = Some(b);
            }
        });
        first
    }

    /// The buffers the kernel filled for a bundle receive's `cqe`
    /// (`IORING_RECVSEND_BUNDLE`, Linux 6.10): the CQE names the first buffer and the byte
    /// count; the kernel filled that buffer and the ones after it in ring order, each to its
    /// end but the last. Pushes them onto `out` in order, and returns how many. Also right
    /// for a CQE of a plain receive (one buffer).
    pub fn take_bundle(&self, cqe: &mut Cqe, out: &mut VecDeque<RingBuf>) -> usize {
        self.take_each(cqe, |b| out.push_back(b))
    }

    /// Hands each buffer the kernel filled for `cqe` to `f`, in order (see
    /// [`take_bundle`](BufRing::take_bundle)), and returns how many; a CQE of one buffer
    /// allocates nothing. Taking them again gives nothing.
    ///
    /// The buffers of a CQE whose op registered this ring
    /// ([`MultiOp::with_buf_ring`](crate::ext::MultiOp::with_buf_ring)) were taken out
    /// of the ring as the driver reaped it, and are handed out as they are. Any other CQE is
    /// read from the ring now, which is right only if nothing was pushed back to the ring
    /// since the kernel posted it: a bundle's buffers are found by their positions in the
    /// ring, and a buffer returned meanwhile may have taken one of those positions (then
    /// nothing is handed out: see [`Cqe::bufs_lost`]).
    pub fn take_each(&self, cqe: &mut Cqe, f: impl FnMut(RingBuf)) -> usize {
        let claim = match std::mem::replace(&mut cqe.bufs, Claim::Taken) {
            Claim::Unclaimed => {
                let res = match &cqe.result {
                    Ok(n) => i32::try_from(*n).unwrap_or(i32::MAX),
                    Err(_) => 0,
                };
                self.claim(res, cqe.flags)
            }
            claimed => claimed,
        };
        match claim {
            Claim::Lost => {
                cqe.bufs = Claim::Lost;
                0
            }
            claim => claim.hand_out(f),
        }
    }

    /// Takes the buffers of a CQE (`res`, `flags`) out of the ring, as the driver reaps it.
    ///
    /// Reaped in the order the kernel posted them, CQEs find their buffers where the kernel
    /// took them: a bundle's run on in ring order from its first buffer, and no buffer
    /// returned since can have taken their positions, since every buffer the kernel took
    /// after them is still out of the ring (the ring holds at most `entries` buffers, so a
    /// position is written again only after `entries` pushes past it). Taken later, after
    /// other CQEs' buffers came back, a position may hold another buffer: that is what put
    /// one connection's bytes in another's stream. Each position is checked against the
    /// position its buffer was pushed at; [`Claim::Lost`] if any differs (nothing is
    /// handed out rather than another buffer's bytes). An incremental ring's offsets follow
    /// from the same order.
    pub(crate) fn claim(&self, res: i32, flags: u32) -> Claim {
        let Some(first) = io_uring::cqueue::buffer_select(flags) else {
            return Claim::Taken;
        };
        if first >= self.inner.entries {
            return Claim::Lost;
        }
        let total = res.max(0) as usize;
        let inner = &self.inner;
        let off = match &inner.inc {
            None => 0,
            // Nothing received: the kernel did not consume the buffer.
            Some(_) if total == 0 => return Claim::Taken,
            Some(inc) => inc[usize::from(first)].filled.get() as usize,
        };
        if !inner.in_order(first, off, total) {
            return Claim::Lost;
        }
        let mut claim = Claim::Taken;
        inner.walk(first, off, total, |bid, start, len| {
            inner.take_ref(bid, start, len);
            claim.push(RingBuf::new(inner.clone(), bid, start, start + len));
        });
        claim
    }
}

impl Inner {
    /// The kernel filled `len` bytes of buffer `bid` from `start`, now handed out: a plain
    /// ring's buffer is out of the ring; an incremental ring's buffer takes a reference
    /// (dropped with its chunk), and is out of the ring once the kernel filled it to its end.
    pub(super) fn take_ref(&self, bid: u16, start: usize, len: usize) {
        let Some(inc) = &self.inc else {
            self.out.set(self.out.get() + 1);
            return;
        };
        let b = &inc[usize::from(bid)];
        b.filled.set((start + len) as u32);
        b.refs.set(b.refs.get() + 1);
        if len > 0 && start + len == self.buf_len as usize {
            self.out.set(self.out.get() + 1);
        }
    }

    /// Whether the ring's entries after `first` still hold the buffers the kernel filled
    /// after it for a CQE of `total` bytes from offset `off`: each position holds the
    /// buffer last pushed there (not one pushed a lap later).
    fn in_order(&self, first: u16, off: usize, total: usize) -> bool {
        let buf_len = self.buf_len as usize;
        let mut slot = self.slot_of[usize::from(first)].get();
        let mut left = total.saturating_sub(buf_len.saturating_sub(off));
        while left > 0 {
            slot = slot.wrapping_add(1);
            let bid = self.bid_at(slot);
            if bid >= self.entries || self.slot_of[usize::from(bid)].get() != slot {
                return false;
            }
            left = left.saturating_sub(buf_len);
        }
        true
    }

    /// The spans of a CQE's `total` bytes, starting `off` bytes into buffer `first`: `f`
    /// gets each buffer's id, where its bytes start and how many there are. A bundle's
    /// buffers follow `first` in ring order, each from its start (only the head buffer of
    /// an incremental ring is ever partly filled). Call it as the CQE is reaped, after
    /// [`in_order`](Inner::in_order) (see [`BufRing::claim`]).
    fn walk(&self, first: u16, mut off: usize, total: usize, mut f: impl FnMut(u16, usize, usize)) {
        let buf_len = self.buf_len as usize;
        let (mut bid, mut slot, mut left) = (first, self.slot_of[usize::from(first)].get(), total);
        loop {
            let take = left.min(buf_len.saturating_sub(off));
            f(bid, off, take);
            left -= take;
            if left == 0 || take == 0 {
                return;
            }
            slot = slot.wrapping_add(1);
            bid = self.bid_at(slot);
            off = 0;
        }
    }
}

/// The buffers one CQE filled, taken out of their ring as the driver reaped the CQE (see
/// [`BufRing::claim`](super::BufRing)), until [`BufRing::take_each`](super::BufRing::take_each)
/// hands them out. Dropping a claim returns its buffers.
#[derive(Default)]
pub(crate) enum Claim {
    /// The CQE was not claimed as it was reaped (its op named no ring): its buffers are
    /// read from the ring when taken.
    #[default]
    Unclaimed,
    /// No buffers, or already handed out.
    Taken,
    /// One buffer (the common case: no allocation).
    One(RingBuf),
    /// A bundle's buffers, in order.
    Bufs(Vec<RingBuf>),
    /// The ring no longer said which buffers the kernel filled; none are handed out.
    Lost,
}

impl Claim {
    /// Adds the next buffer of the CQE.
    pub(super) fn push(&mut self, buf: RingBuf) {
        *self = match std::mem::replace(self, Claim::Taken) {
            Claim::Taken | Claim::Unclaimed | Claim::Lost => Claim::One(buf),
            Claim::One(first) => Claim::Bufs(vec![first, buf]),
            Claim::Bufs(mut v) => {
                v.push(buf);
                Claim::Bufs(v)
            }
        };
    }

    /// Hands the buffers to `f` in order; returns how many.
    pub(super) fn hand_out(self, mut f: impl FnMut(RingBuf)) -> usize {
        match self {
            Claim::One(b) => {
                f(b);
                1
            }
            Claim::Bufs(v) => {
                let n = v.len();
                v.into_iter().for_each(f);
                n
            }
            Claim::Unclaimed | Claim::Taken | Claim::Lost => 0,
        }
    }

    /// Whether the buffers were lost (see [`Claim::Lost`]).
    pub(crate) fn is_lost(&self) -> bool {
        matches!(self, Claim::Lost)
    }
}

impl fmt::Debug for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Claim::Unclaimed => f.write_str("Unclaimed"),
            Claim::Taken => f.write_str("Taken"),
            Claim::One(b) => f.debug_tuple("One").field(b).finish(),
            Claim::Bufs(v) => f.debug_tuple("Bufs").field(&v.len()).finish(),
            Claim::Lost => f.write_str("Lost"),
        }
    }
}
