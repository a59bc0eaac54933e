use super::*;

fn deps() -> SourceDeps {
    let mut deps = SourceDeps::default();
    deps.forward("child.rs")
        .forward(Canonical::from("/abs/other.rs"))
        .blocker("macros.rs")
        .artifact("ünïcode/dep.cfg");
    deps
}

#[test]
fn the_source_envelope_gives_back_what_the_parse_declared_and_the_hosts_bytes() {
    let declared = deps();
    let bytes = encode_source_envelope(&declared, b"host bytes");
    let (decoded, host) = decode_source_envelope(&bytes).expect("decodes");
    assert_eq!(decoded, declared);
    assert_eq!(host, b"host bytes");
    let empty_bytes = encode_source_envelope(&SourceDeps::default(), b"");
    let (empty, host) = decode_source_envelope(&empty_bytes).unwrap();
    assert_eq!(empty, SourceDeps::default());
    assert!(host.is_empty());
}

#[test]
fn a_truncated_or_foreign_envelope_does_not_decode() {
    let bytes = encode_source_envelope(&deps(), b"");
    for len in 0..bytes.len() {
        // Every cut inside the lists is refused; the host's part is empty.
        assert!(
            decode_source_envelope(&bytes[..len]).is_none(),
            "cut at {len}"
        );
    }
    let mut bad_tag = bytes.clone();
    bad_tag[4] = 9;
    assert!(decode_source_envelope(&bad_tag).is_none());
}

#[test]
fn keys_cover_every_input_and_the_version() {
    let config = |version: &str| {
        OutputStoreConfig::new(Arc::new(verter_store::MemoryStore::new(1 << 20)), version)
    };
    let one = Persist::start(&config("1"), true).unwrap();
    let two = Persist::start(&config("2"), true).unwrap();
    let (a, b) = (Canonical::from("a.rs"), Canonical::from("b.rs"));
    let rust = Language::new("rust");
    let key = one.source_key(&a, &rust, "fn f() {}");
    assert_eq!(key, one.source_key(&a, &rust, "fn f() {}"));
    assert_ne!(key, two.source_key(&a, &rust, "fn f() {}"), "the version");
    assert_ne!(key, one.source_key(&b, &rust, "fn f() {}"), "the path");
    assert_ne!(
        key,
        one.source_key(&a, &Language::new("c"), "fn f() {}"),
        "the language"
    );
    assert_ne!(key, one.source_key(&a, &rust, "fn g() {}"), "the text");
    let (d1, d2) = (digest_of(b"one"), digest_of(b"two"));
    assert_ne!(one.analysis_key(&a, &d1), one.analysis_key(&a, &d2));
    let artifact = |profile, blockers: &[(&Canonical, &Digest)], deps: &[(&Canonical, &Digest)]| {
        one.artifact_key(
            &a,
            ProfileHash(profile),
            &d1,
            blockers.iter().copied(),
            deps.iter().copied(),
        )
    };
    let base = artifact(1, &[(&b, &d1)], &[]);
    assert_ne!(base, artifact(2, &[(&b, &d1)], &[]), "the profile");
    assert_ne!(base, artifact(1, &[(&b, &d2)], &[]), "a blocker's analysis");
    assert_ne!(
        base,
        artifact(1, &[], &[(&b, &d1)]),
        "a blocker is not a dependency"
    );
    assert_ne!(base, artifact(1, &[], &[]), "the blocker list");
}

#[test]
fn a_flush_returns_once_the_writes_before_it_are_in_the_store() {
    let store = Arc::new(verter_store::MemoryStore::new(1 << 20));
    let persist = Persist::start(&OutputStoreConfig::new(store.clone(), "1"), true).unwrap();
    let a = Canonical::from("a.rs");
    let key = persist.analysis_key(&a, &digest_of(b""));
    let digest = persist.put(key, b"value".to_vec(), &a);
    persist.flush();
    let entry = store.get(&key).unwrap().expect("written");
    assert_eq!(
        (entry.value.as_slice(), entry.digest),
        (&b"value"[..], digest)
    );
    assert_eq!(entry.path.as_deref(), Some("a.rs"));
    assert_eq!(persist.counters.written.load(Ordering::Relaxed), 1);
}
