//! Finite models: tabular views and their checks, sparse row supports, Dirichlet rows, MDPs,
//! distributions over MDPs (FDM), posterior counts, the benchmark's named problems, and the
//! hardness measures of an MDP.

pub mod counts;
pub mod dirichlet;
pub mod fdm;
pub mod hardness;
pub mod mdp;
pub mod problems;
pub mod sparse;
pub mod tables;

pub use counts::CountModel;
pub use fdm::Fdm;
pub use mdp::Mdp;
pub use sparse::RowSupports;
pub use tables::TabularView;
