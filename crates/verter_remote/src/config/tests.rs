//! Unit tests of endpoint parsing, validation and backoff.

use std::time::Duration;

use super::*;

#[test]
fn endpoints_are_normalised_to_http_uris() {
    let uri = |endpoint: &str| RemoteConfig::new(endpoint).endpoint_uri();
    assert_eq!(uri("127.0.0.1:1").unwrap(), "http://127.0.0.1:1");
    assert_eq!(uri("grpc://host:2").unwrap(), "http://host:2");
    assert_eq!(uri("http://host:3").unwrap(), "http://host:3");
    assert!(matches!(
        uri("grpcs://host:4"),
        Err(RemoteError::InvalidConfig { .. })
    ));
    assert!(matches!(uri(""), Err(RemoteError::InvalidConfig { .. })));
    assert!(matches!(
        uri("ftp://x"),
        Err(RemoteError::InvalidConfig { .. })
    ));
}

#[test]
fn zero_attempts_are_refused() {
    let config = RemoteConfig::new("http://h:1").with_retry(RetryPolicy::new(
        0,
        Duration::from_millis(1),
        Duration::from_millis(1),
    ));
    assert!(matches!(
        config.validate(),
        Err(RemoteError::InvalidConfig { .. })
    ));
    assert_eq!(RemoteConfig::new("http://h:1").validate(), Ok(()));
}

#[test]
fn backoff_doubles_up_to_the_cap() {
    let policy = RetryPolicy::new(10, Duration::from_millis(100), Duration::from_millis(700));
    assert_eq!(policy.backoff(1), Duration::from_millis(100));
    assert_eq!(policy.backoff(2), Duration::from_millis(200));
    assert_eq!(policy.backoff(3), Duration::from_millis(400));
    assert_eq!(policy.backoff(4), Duration::from_millis(700));
    assert_eq!(policy.backoff(40), Duration::from_millis(700));
}
