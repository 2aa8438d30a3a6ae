//! The file descriptor shared by a [`File`](crate::File) and the ops it has in flight: the
//! runtime's [`SharedFd`](runtime::ext::SharedFd), whose invariant every op here keeps (an op
//! holds a clone in its data until its final CQE).

pub(crate) use runtime::ext::SharedFd;
