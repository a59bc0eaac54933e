//! Crate paths: shared when cloned, equal and ordered by their segments.

use super::*;

#[test]
fn a_cloned_crate_path_shares_its_segments() {
    let deep = CratePath::from_segments(std::iter::repeat_n("m", 2000));
    let copy = deep.clone();
    assert_eq!(copy, deep);
    assert_eq!(copy.segments().as_ptr(), deep.segments().as_ptr());
    assert_eq!(
        deep.join::<&str>(&[]).segments().as_ptr(),
        deep.segments().as_ptr()
    );
}

#[test]
fn crate_paths_join_compare_and_print_by_their_segments() {
    let a = CratePath::root().join(&["a"]);
    let ab = a.join(&["b"]);
    assert_eq!(ab, CratePath::from_segments(["a", "b"]));
    assert_eq!(ab.parent(), Some(a.clone()));
    assert_eq!(ab.prefix(1), a);
    assert!(ab.starts_with(&a) && !a.starts_with(&ab));
    assert!(a < ab);
    assert_eq!(ab.to_string(), "crate::a::b");
    assert_eq!(CratePath::root().parent(), None);
}
