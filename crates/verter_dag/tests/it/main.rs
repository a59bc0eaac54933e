//! The public behaviour of `verter_dag`, through its public API only.

mod identities;
mod model;
