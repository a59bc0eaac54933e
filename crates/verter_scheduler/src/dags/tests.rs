//! Unit tests of the DAG runs' transitions.
