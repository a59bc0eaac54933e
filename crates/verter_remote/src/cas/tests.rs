//! Unit tests of batch packing, write chunking and upload ids.

use super::*;

fn blob_of_size(size: usize) -> Digest {
    Digest::of(&vec![b'x'; size])
}

#[test]
fn a_blob_fits_a_batch_only_with_its_overhead() {
    assert!(fits_batch(1000 - BATCH_BLOB_OVERHEAD as u64, 1000));
    assert!(!fits_batch(1001 - BATCH_BLOB_OVERHEAD as u64, 1000));
    assert!(!fits_batch(u64::MAX, 1000));
}

#[test]
fn batches_never_exceed_the_limit_and_keep_every_blob() {
    let limit = 1000;
    let digests: Vec<Digest> = [100, 500, 300, 700, 1, 2, 3]
        .into_iter()
        .map(blob_of_size)
        .collect();
    let packed = batches(digests.clone(), limit);
    for batch in &packed {
        let cost: usize = batch
            .iter()
            .map(|d| d.len() as usize + BATCH_BLOB_OVERHEAD)
            .sum();
        assert!(cost <= limit, "batch of {cost} bytes over {limit}");
    }
    let flattened: Vec<Digest> = packed.into_iter().flatten().collect();
    assert_eq!(flattened, digests);
}

#[test]
fn writes_are_chunked_with_offsets_and_one_finish() {
    let data = Bytes::from(vec![7u8; WRITE_CHUNK * 2 + 5]);
    let requests = write_requests("uploads/x/blobs/h/1".to_owned(), &data);
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].resource_name, "uploads/x/blobs/h/1");
    assert!(requests[1..].iter().all(|r| r.resource_name.is_empty()));
    let offsets: Vec<i64> = requests.iter().map(|r| r.write_offset).collect();
    assert_eq!(offsets, [0, WRITE_CHUNK as i64, 2 * WRITE_CHUNK as i64]);
    let finishes: Vec<bool> = requests.iter().map(|r| r.finish_write).collect();
    assert_eq!(finishes, [false, false, true]);
    let total: usize = requests.iter().map(|r| r.data.len()).sum();
    assert_eq!(total, data.len());
}

#[test]
fn an_empty_write_is_one_finishing_message() {
    let requests = write_requests("r".to_owned(), &Bytes::new());
    assert_eq!(requests.len(), 1);
    assert!(requests[0].finish_write);
}

#[test]
fn upload_ids_are_uuid_shaped_and_distinct() {
    let first = upload_id();
    let second = upload_id();
    assert_ne!(first, second);
    let groups: Vec<usize> = first.split('-').map(str::len).collect();
    assert_eq!(groups, [8, 4, 4, 4, 12]);
    assert_eq!(&first[14..15], "4");
}

#[test]
fn verification_refuses_a_mismatching_blob() {
    let digest = Digest::of(b"right");
    assert!(verified(&digest, Bytes::from_static(b"right")).is_ok());
    assert!(matches!(
        verified(&digest, Bytes::from_static(b"wrong")),
        Err(RemoteError::Protocol { .. })
    ));
}
