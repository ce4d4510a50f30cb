//! Helpers of the criterion benches: the benchmark's problems, from the core's single source
//! (`bbrl::problems`, checked against the original data files by the Python test suite).

use bbrl::fdm::Fdm;

/// GC, the Generalised Chain (accurate prior).
pub fn gc() -> Fdm {
    bbrl::problems::generalized_chain()
}

/// GDL, the Generalised Double-Loop (accurate prior).
pub fn gdl() -> Fdm {
    bbrl::problems::generalized_double_loop()
}

/// Grid, the 5x5 grid (accurate prior).
pub fn grid() -> Fdm {
    bbrl::problems::grid()
}
