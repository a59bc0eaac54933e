//! The simulator's public behaviour: seeds pass, runs are deterministic,
//! host DAGs are judged, and a bounded threaded soak finds nothing.

mod causes;
mod dag;
mod dag_cancel_race;
mod inline;
mod remote;
mod threaded;
mod trace;
