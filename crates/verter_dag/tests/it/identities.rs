//! Identities as a layer above sees them.

use verter_dag::{
    Canonical, DepKey, FileIdentity, Generation, Incarnation, SourceVersion, TargetStage,
    WorkNodeIdentity,
};

#[test]
fn a_dep_key_names_the_same_work_as_its_work_identity() {
    let file = FileIdentity::new(
        Canonical::from("lib.rs"),
        Incarnation::allocate(),
        Generation::ZERO,
    );
    let key: DepKey = file.at(TargetStage::Analysis);
    let work = WorkNodeIdentity::from(key);
    assert_eq!(work.as_dep_key(), Some(&key));
    assert_eq!(work.file(), Some(&file));
    assert_eq!(
        file.version(),
        SourceVersion::new(file.incarnation, Generation::ZERO)
    );
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Canonical>();
    send_sync::<WorkNodeIdentity>();
    send_sync::<verter_dag::CancellationToken>();
};
