use super::{Digest, StoreKey};

#[test]
fn a_digest_displays_as_64_lowercase_hex_digits() {
    let mut bytes = [0u8; 32];
    bytes[0] = 0xAB;
    bytes[1] = 0x01;
    bytes[31] = 0xFF;
    let text = Digest(bytes).to_string();
    assert_eq!(text.len(), 64);
    assert!(text.starts_with("ab01"));
    assert!(text.ends_with("ff"));
    assert_eq!(text, text.to_lowercase());
}

#[test]
fn a_key_displays_as_its_digest_and_debugs_with_its_type() {
    let key = StoreKey::from([7u8; 32]);
    assert_eq!(key.to_string(), "07".repeat(32));
    assert_eq!(format!("{key:?}"), format!("StoreKey({})", "07".repeat(32)));
    assert_eq!(key.as_bytes(), &[7u8; 32]);
}
