//! What the machine is and how long things took on it: thread and process CPU time, and the
//! host description (CPU model, vector extensions, cores, load) recorded beside every result, and
//! the thread-count rule of every parallel call, and the memory rule of every size a parameter sets.

pub mod cputime;
pub mod host;
pub mod memory;
pub mod threads;
