//! Provided-buffer rings on the readiness backend: the kernel's part of
//! `IORING_REGISTER_PBUF_RING`, played in user space, so that the default read path (one
//! multishot receive per connection, picking buffers from the core's shared ring only when
//! data arrives) is the same on both backends and an idle connection holds no buffer.
//!
//! The ring is the application's memory, laid out as the kernel's `io_uring_buf_ring`: 16-byte
//! entries `{ addr: u64, len: u32, bid: u16, resv: u16 }`, the tail (written by the
//! application with release ordering) in the first entry's `resv` field. The backend keeps the
//! head, as the kernel does, and moves it past a buffer only once a receive put bytes in it
//! (an `EAGAIN`, an error or end of file leaves the buffer in the ring, as io_uring recycles
//! it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, Ordering};

/// `IORING_CQE_F_BUFFER`: the CQE names the buffer it filled (`bid << 16`).
pub(crate) const IORING_CQE_F_BUFFER: u32 = 1 << 0;
/// `IOU_PBUF_RING_INC`: incremental consumption, which the readiness backend does not do.
const IOU_PBUF_RING_INC: u16 = 2;

/// One registered ring.
struct Ring {
    /// Address of entry 0.
    addr: u64,
    mask: u16,
    /// The next entry to pick.
    head: u16,
}

/// A buffer picked from a ring, not yet consumed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Picked {
    pub(crate) addr: u64,
    pub(crate) len: u32,
    pub(crate) bid: u16,
}

/// The registered rings, by group id.
#[derive(Default)]
pub(crate) struct Rings {
    rings: HashMap<u16, Ring>,
}

impl Rings {
    /// Registers the ring of `entries` (a power of two) at `addr` under `bgid`. `Err`: an
    /// errno, as the kernel's registration answers.
    ///
    /// # Safety
    /// `addr` points to `entries` ring entries that stay valid until `unregister(bgid)`.
    pub(crate) unsafe fn register(
        &mut self,
        addr: u64,
        entries: u16,
        bgid: u16,
        flags: u16,
    ) -> Result<(), i32> {
        if flags & IOU_PBUF_RING_INC != 0 || flags & !IOU_PBUF_RING_INC != 0 {
            return Err(libc::EINVAL);
        }
        if entries == 0 || !entries.is_power_of_two() || addr == 0 || addr % 16 != 0 {
            return Err(libc::EINVAL);
        }
        if self.rings.contains_key(&bgid) {
            return Err(libc::EEXIST);
        }
        self.rings.insert(
            bgid,
            Ring {
                addr,
                mask: entries - 1,
                head: 0,
            },
        );
        Ok(())
    }

    /// Forgets ring `bgid`: no buffer is picked from it afterwards.
    pub(crate) fn unregister(&mut self, bgid: u16) -> bool {
        self.rings.remove(&bgid).is_some()
    }

    /// The head of ring `bgid` (`IORING_REGISTER_PBUF_STATUS`).
    pub(crate) fn head(&self, bgid: u16) -> Option<u16> {
        self.rings.get(&bgid).map(|r| r.head)
    }

    /// The buffer at the head of ring `bgid`, without taking it; `None` when the ring is
    /// empty or not registered (the receive's `ENOBUFS`).
    pub(crate) fn peek(&self, bgid: u16) -> Option<Picked> {
        let r = self.rings.get(&bgid)?;
        // SAFETY: the ring's memory is valid while registered (`register`'s contract); the
        // tail is a u16 at byte 14 of entry 0, 2-aligned (the ring is 16-aligned), which the
        // application stores with release ordering after writing the entries before it.
        let tail = unsafe { (*((r.addr + 14) as *const AtomicU16)).load(Ordering::Acquire) };
        if tail == r.head {
            return None;
        }
        let entry = r.addr + 16 * u64::from(r.head & r.mask);
        // SAFETY: entry `head & mask` is inside the ring, written by the application before
        // it published the tail past it (acquire above). Entry 0's `resv` is the tail, which
        // only the fields read here (addr, len, bid) do not overlap.
        unsafe {
            Some(Picked {
                addr: std::ptr::read(entry as *const u64),
                len: std::ptr::read((entry + 8) as *const u32),
                bid: std::ptr::read((entry + 12) as *const u16),
            })
        }
    }

    /// Takes the buffer `peek` gave: a receive filled it.
    pub(crate) fn consume(&mut self, bgid: u16) {
        if let Some(r) = self.rings.get_mut(&bgid) {
            r.head = r.head.wrapping_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring laid out as the kernel's: entries published by moving the tail; picks follow
    /// the head, and only a consumed pick moves it.
    #[test]
    fn picks_follow_the_published_tail() {
        #[repr(C, align(16))]
        struct Entries([u64; 8]); // 4 entries of 16 bytes
        let mut mem = Box::new(Entries([0; 8]));
        let base = mem.0.as_mut_ptr() as u64;
        let mut rings = Rings::default();
        // SAFETY: `mem` outlives the registration (unregistered below).
        unsafe { rings.register(base, 4, 7, 0) }.unwrap();
        // SAFETY: as above, and the same ring twice is refused.
        assert_eq!(unsafe { rings.register(base, 4, 7, 0) }, Err(libc::EEXIST));
        // SAFETY: `mem` outlives the call, and an incremental ring is refused (never kept).
        let inc = unsafe { rings.register(base, 4, 8, IOU_PBUF_RING_INC) };
        assert_eq!(
            inc,
            Err(libc::EINVAL),
            "incremental rings are not played here"
        );
        assert!(rings.peek(7).is_none(), "an empty ring");
        let put = |mem: &mut Entries, i: usize, addr: u64, len: u32, bid: u16| {
            mem.0[2 * i] = addr;
            // len (u32) then bid (u16) then resv/tail (u16), little-endian within the word.
            let tail_bits = mem.0[2 * i + 1] & 0xffff_0000_0000_0000;
            mem.0[2 * i + 1] = u64::from(len) | (u64::from(bid) << 32) | tail_bits;
        };
        let publish = |mem: &mut Entries, tail: u16| {
            let w = &mut mem.0[1];
            *w = (*w & 0x0000_ffff_ffff_ffff) | (u64::from(tail) << 48);
        };
        put(&mut mem, 0, 0x1000, 64, 3);
        put(&mut mem, 1, 0x2000, 32, 9);
        publish(&mut mem, 2);
        let p = rings.peek(7).unwrap();
        assert_eq!((p.addr, p.len, p.bid), (0x1000, 64, 3));
        // Not consumed (an EAGAIN): the same buffer again.
        assert_eq!(rings.peek(7).unwrap().bid, 3);
        rings.consume(7);
        assert_eq!(rings.head(7), Some(1));
        assert_eq!(rings.peek(7).unwrap().bid, 9);
        rings.consume(7);
        assert!(rings.peek(7).is_none(), "both taken");
        assert!(rings.unregister(7));
        assert!(!rings.unregister(7));
        assert!(rings.peek(7).is_none() && rings.head(7).is_none());
    }
}
