//! The fake's gRPC services and the task that runs one execution. Runs only
//! on the fake's own thread and runtime; never blocks it (the tables'
//! locks are held for lookups and inserts only).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::bytestream::byte_stream_server::{ByteStream, ByteStreamServer};
use bazel_remote_apis::google::bytestream::{
    QueryWriteStatusRequest, QueryWriteStatusResponse, ReadRequest, ReadResponse, WriteRequest,
    WriteResponse,
};
use bazel_remote_apis::google::longrunning::operations_server::{Operations, OperationsServer};
use bazel_remote_apis::google::longrunning::{
    CancelOperationRequest, DeleteOperationRequest, GetOperationRequest, ListOperationsRequest,
    ListOperationsResponse, Operation, WaitOperationRequest, operation,
};
use bazel_remote_apis::google::protobuf::{Any, Empty};
use bazel_remote_apis::google::rpc;
use bytes::Bytes;
use prost::Message;
use reapi::action_cache_server::{ActionCache, ActionCacheServer};
use reapi::capabilities_server::{Capabilities, CapabilitiesServer};
use reapi::content_addressable_storage_server::{
    ContentAddressableStorage, ContentAddressableStorageServer,
};
use reapi::execution_server::{Execution, ExecutionServer};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::{FakeCall, OperationEntry, Rpc, State, take};
use crate::digest::Digest;
use crate::error::StatusCode;
use crate::proto::{
    EXECUTE_METADATA_TYPE, EXECUTE_RESPONSE_TYPE, MISSING_VIOLATION, PRECONDITION_FAILURE_TYPE,
    PreconditionFailure, Violation, blob_subject,
};

/// The largest message the fake encodes or decodes.
const MESSAGE_LIMIT: usize = 64 * 1024 * 1024;

/// Bytes per `ByteStream.Read` message.
const READ_CHUNK: usize = 64 * 1024;

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The body of the fake's thread: serve until the [`super::FakeServer`]
/// drops, then drop the runtime and with it every connection and task.
pub(super) fn serve(
    state: Arc<State>,
    listener: std::net::TcpListener,
    shutdown_requested: oneshot::Receiver<()>,
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("fake REAPI server: build its runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)
            .expect("fake REAPI server: adopt the listener");
        let incoming =
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
        let service = FakeService { state };
        let server = tonic::transport::Server::builder()
            .add_service(CapabilitiesServer::new(service.clone()))
            .add_service(
                ContentAddressableStorageServer::new(service.clone())
                    .max_decoding_message_size(MESSAGE_LIMIT)
                    .max_encoding_message_size(MESSAGE_LIMIT),
            )
            .add_service(
                ByteStreamServer::new(service.clone())
                    .max_decoding_message_size(MESSAGE_LIMIT)
                    .max_encoding_message_size(MESSAGE_LIMIT),
            )
            .add_service(
                ActionCacheServer::new(service.clone())
                    .max_decoding_message_size(MESSAGE_LIMIT)
                    .max_encoding_message_size(MESSAGE_LIMIT),
            )
            .add_service(
                ExecutionServer::new(service.clone())
                    .max_decoding_message_size(MESSAGE_LIMIT)
                    .max_encoding_message_size(MESSAGE_LIMIT),
            )
            .add_service(OperationsServer::new(service))
            .serve_with_incoming(incoming);
        tokio::select! {
            served = server => {
                if let Err(err) = served {
                    tracing::warn!(%err, "fake REAPI server stopped");
                }
            }
            _ = shutdown_requested => {}
        }
    });
}

#[derive(Clone)]
struct FakeService {
    state: Arc<State>,
}

impl FakeService {
    /// Answers an injected failure, if one is pending for `rpc`.
    fn enter(&self, rpc: Rpc) -> Result<(), Status> {
        let injected = self
            .state
            .faults
            .lock()
            .fail_next
            .get_mut(&rpc)
            .is_some_and(take);
        if injected {
            self.state.record(FakeCall::Injected { rpc });
            return Err(Status::unavailable("fake: injected failure"));
        }
        Ok(())
    }

    fn store(&self, digest: Digest, data: Bytes) {
        if !self.state.faults.lock().discard_uploads {
            self.state.cas.lock().insert(digest, data);
        }
    }

    fn blob(&self, digest: &Digest) -> Option<Bytes> {
        if digest.is_empty_blob() {
            return Some(Bytes::new());
        }
        self.state.cas.lock().get(digest).cloned()
    }

    /// Refuses a batch whose blobs exceed the announced limit.
    fn check_batch(&self, total: usize) -> Result<(), Status> {
        let limit = self.state.behaviour.max_batch_total_size_bytes;
        if limit > 0 && total as i64 > limit {
            return Err(Status::invalid_argument(format!(
                "fake: batch of {total} bytes over the limit of {limit}"
            )));
        }
        Ok(())
    }
}

fn digest_of(digest: Option<&reapi::Digest>) -> Result<Digest, Status> {
    let digest = digest
        .map(Digest::from_proto)
        .ok_or_else(|| Status::invalid_argument("fake: no digest"))?;
    if !digest.is_well_formed() {
        return Err(Status::invalid_argument(format!(
            "fake: malformed digest {digest}"
        )));
    }
    Ok(digest)
}

fn ok_status() -> Option<rpc::Status> {
    Some(rpc::Status::default())
}

fn status(code: StatusCode, message: &str) -> Option<rpc::Status> {
    Some(rpc::Status {
        code: code.0,
        message: message.to_owned(),
        details: Vec::new(),
    })
}

/// The digest a ByteStream resource name ends with (`.../blobs/{hash}/{size}`).
fn resource_digest(resource_name: &str) -> Result<Digest, Status> {
    let parts: Vec<&str> = resource_name.split('/').collect();
    let bad = || Status::invalid_argument(format!("fake: bad resource name {resource_name:?}"));
    let at = parts
        .iter()
        .position(|part| *part == "blobs")
        .ok_or_else(bad)?;
    let (Some(hash), Some(size)) = (parts.get(at + 1), parts.get(at + 2)) else {
        return Err(bad());
    };
    let digest = Digest {
        hash: (*hash).to_owned(),
        size: size.parse().map_err(|_| bad())?,
    };
    if !digest.is_well_formed() {
        return Err(bad());
    }
    Ok(digest)
}

#[tonic::async_trait]
impl Capabilities for FakeService {
    async fn get_capabilities(
        &self,
        _request: Request<reapi::GetCapabilitiesRequest>,
    ) -> Result<Response<reapi::ServerCapabilities>, Status> {
        self.enter(Rpc::GetCapabilities)?;
        self.state.record(FakeCall::GetCapabilities);
        let sha256 = reapi::digest_function::Value::Sha256 as i32;
        let version = |minor| bazel_remote_apis::build::bazel::semver::SemVer {
            major: 2,
            minor,
            ..Default::default()
        };
        Ok(Response::new(reapi::ServerCapabilities {
            cache_capabilities: Some(reapi::CacheCapabilities {
                digest_functions: vec![sha256],
                action_cache_update_capabilities: Some(reapi::ActionCacheUpdateCapabilities {
                    update_enabled: true,
                }),
                max_batch_total_size_bytes: self.state.behaviour.max_batch_total_size_bytes,
                ..Default::default()
            }),
            execution_capabilities: Some(reapi::ExecutionCapabilities {
                digest_function: sha256,
                exec_enabled: true,
                digest_functions: vec![sha256],
                ..Default::default()
            }),
            low_api_version: Some(version(0)),
            high_api_version: Some(version(3)),
            ..Default::default()
        }))
    }
}

#[tonic::async_trait]
impl ContentAddressableStorage for FakeService {
    async fn find_missing_blobs(
        &self,
        request: Request<reapi::FindMissingBlobsRequest>,
    ) -> Result<Response<reapi::FindMissingBlobsResponse>, Status> {
        self.enter(Rpc::FindMissingBlobs)?;
        let asked = request
            .into_inner()
            .blob_digests
            .iter()
            .map(|digest| digest_of(Some(digest)))
            .collect::<Result<Vec<_>, _>>()?;
        let lie = take(&mut self.state.faults.lock().lie_find_missing);
        let missing: Vec<Digest> = if lie {
            Vec::new()
        } else {
            let cas = self.state.cas.lock();
            asked
                .iter()
                .filter(|digest| !digest.is_empty_blob() && !cas.contains_key(*digest))
                .cloned()
                .collect()
        };
        let response = reapi::FindMissingBlobsResponse {
            missing_blob_digests: missing.iter().map(Digest::to_proto).collect(),
        };
        self.state
            .record(FakeCall::FindMissingBlobs { asked, missing });
        Ok(Response::new(response))
    }

    async fn batch_update_blobs(
        &self,
        request: Request<reapi::BatchUpdateBlobsRequest>,
    ) -> Result<Response<reapi::BatchUpdateBlobsResponse>, Status> {
        self.enter(Rpc::BatchUpdateBlobs)?;
        let request = request.into_inner();
        self.check_batch(request.requests.iter().map(|blob| blob.data.len()).sum())?;
        let mut digests = Vec::with_capacity(request.requests.len());
        let mut responses = Vec::with_capacity(request.requests.len());
        for blob in request.requests {
            let digest = digest_of(blob.digest.as_ref())?;
            let data = Bytes::from(blob.data);
            let answer = if Digest::of(&data) == digest {
                self.store(digest.clone(), data);
                ok_status()
            } else {
                status(
                    StatusCode::INVALID_ARGUMENT,
                    "fake: data does not match the digest",
                )
            };
            responses.push(reapi::batch_update_blobs_response::Response {
                digest: Some(digest.to_proto()),
                status: answer,
            });
            digests.push(digest);
        }
        self.state.record(FakeCall::BatchUpdateBlobs { digests });
        Ok(Response::new(reapi::BatchUpdateBlobsResponse { responses }))
    }

    async fn batch_read_blobs(
        &self,
        request: Request<reapi::BatchReadBlobsRequest>,
    ) -> Result<Response<reapi::BatchReadBlobsResponse>, Status> {
        self.enter(Rpc::BatchReadBlobs)?;
        let digests = request
            .into_inner()
            .digests
            .iter()
            .map(|digest| digest_of(Some(digest)))
            .collect::<Result<Vec<_>, _>>()?;
        self.check_batch(digests.iter().map(|digest| digest.len() as usize).sum())?;
        let responses = digests
            .iter()
            .map(|digest| {
                let (data, answer) = match self.blob(digest) {
                    Some(data) => (data.to_vec(), ok_status()),
                    None => (
                        Vec::new(),
                        status(StatusCode::NOT_FOUND, "fake: no such blob"),
                    ),
                };
                reapi::batch_read_blobs_response::Response {
                    digest: Some(digest.to_proto()),
                    data,
                    compressor: 0,
                    status: answer,
                }
            })
            .collect();
        self.state.record(FakeCall::BatchReadBlobs { digests });
        Ok(Response::new(reapi::BatchReadBlobsResponse { responses }))
    }

    type GetTreeStream = BoxStream<reapi::GetTreeResponse>;

    async fn get_tree(
        &self,
        _request: Request<reapi::GetTreeRequest>,
    ) -> Result<Response<Self::GetTreeStream>, Status> {
        Err(Status::unimplemented("fake: GetTree"))
    }

    async fn split_blob(
        &self,
        _request: Request<reapi::SplitBlobRequest>,
    ) -> Result<Response<reapi::SplitBlobResponse>, Status> {
        Err(Status::unimplemented("fake: SplitBlob"))
    }

    type GetChunkMappingStream = BoxStream<reapi::GetChunkMappingResponse>;

    async fn get_chunk_mapping(
        &self,
        _request: Request<reapi::GetChunkMappingRequest>,
    ) -> Result<Response<Self::GetChunkMappingStream>, Status> {
        Err(Status::unimplemented("fake: GetChunkMapping"))
    }

    async fn splice_blob(
        &self,
        _request: Request<reapi::SpliceBlobRequest>,
    ) -> Result<Response<reapi::SpliceBlobResponse>, Status> {
        Err(Status::unimplemented("fake: SpliceBlob"))
    }

    async fn register_chunk_mapping(
        &self,
        _request: Request<Streaming<reapi::RegisterChunkMappingRequest>>,
    ) -> Result<Response<reapi::RegisterChunkMappingResponse>, Status> {
        Err(Status::unimplemented("fake: RegisterChunkMapping"))
    }
}

#[tonic::async_trait]
impl ByteStream for FakeService {
    type ReadStream = BoxStream<ReadResponse>;

    async fn read(
        &self,
        request: Request<ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        self.enter(Rpc::ByteStreamRead)?;
        let request = request.into_inner();
        self.state.record(FakeCall::ByteStreamRead {
            resource_name: request.resource_name.clone(),
        });
        let digest = resource_digest(&request.resource_name)?;
        let data = self
            .blob(&digest)
            .ok_or_else(|| Status::not_found(format!("fake: no blob {digest}")))?;
        let offset = usize::try_from(request.read_offset)
            .ok()
            .filter(|offset| *offset <= data.len())
            .ok_or_else(|| Status::out_of_range("fake: read offset"))?;
        let chunks: Vec<Result<ReadResponse, Status>> = data[offset..]
            .chunks(READ_CHUNK)
            .map(|chunk| {
                Ok(ReadResponse {
                    data: chunk.to_vec(),
                })
            })
            .collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks))))
    }

    async fn write(
        &self,
        request: Request<Streaming<WriteRequest>>,
    ) -> Result<Response<WriteResponse>, Status> {
        self.enter(Rpc::ByteStreamWrite)?;
        let mut stream = request.into_inner();
        let mut resource_name = String::new();
        let mut data = Vec::new();
        while let Some(message) = stream.message().await? {
            if resource_name.is_empty() {
                resource_name = message.resource_name;
            }
            if usize::try_from(message.write_offset).ok() != Some(data.len()) {
                return Err(Status::invalid_argument("fake: write offset out of order"));
            }
            data.extend_from_slice(&message.data);
            if message.finish_write {
                break;
            }
        }
        self.state.record(FakeCall::ByteStreamWrite {
            resource_name: resource_name.clone(),
            size: data.len() as u64,
        });
        let digest = resource_digest(&resource_name)?;
        let data = Bytes::from(data);
        if Digest::of(&data) != digest {
            return Err(Status::invalid_argument(
                "fake: data does not match the resource's digest",
            ));
        }
        self.store(digest.clone(), data);
        Ok(Response::new(WriteResponse {
            committed_size: digest.size,
        }))
    }

    async fn query_write_status(
        &self,
        _request: Request<QueryWriteStatusRequest>,
    ) -> Result<Response<QueryWriteStatusResponse>, Status> {
        Err(Status::unimplemented("fake: QueryWriteStatus"))
    }
}

#[tonic::async_trait]
impl ActionCache for FakeService {
    async fn get_action_result(
        &self,
        request: Request<reapi::GetActionResultRequest>,
    ) -> Result<Response<reapi::ActionResult>, Status> {
        self.enter(Rpc::GetActionResult)?;
        let action = digest_of(request.into_inner().action_digest.as_ref())?;
        let miss = take(&mut self.state.faults.lock().miss_action_cache);
        let result = if miss {
            None
        } else {
            self.state.action_cache.lock().get(&action).cloned()
        };
        self.state.record(FakeCall::GetActionResult {
            action,
            hit: result.is_some(),
        });
        result
            .map(Response::new)
            .ok_or_else(|| Status::not_found("fake: no cached result"))
    }

    async fn update_action_result(
        &self,
        request: Request<reapi::UpdateActionResultRequest>,
    ) -> Result<Response<reapi::ActionResult>, Status> {
        self.enter(Rpc::UpdateActionResult)?;
        let request = request.into_inner();
        let action = digest_of(request.action_digest.as_ref())?;
        let result = request
            .action_result
            .ok_or_else(|| Status::invalid_argument("fake: no action result"))?;
        self.state
            .action_cache
            .lock()
            .insert(action.clone(), result.clone());
        self.state.record(FakeCall::UpdateActionResult { action });
        Ok(Response::new(result))
    }
}

/// What the fake needs to run one action, read from the CAS.
struct LoadedAction {
    action: reapi::Action,
    command: reapi::Command,
    /// Every input file, by path relative to the input root.
    inputs: BTreeMap<String, Bytes>,
}

impl FakeService {
    /// Reads the action, its command and its input tree from the CAS, or
    /// names every blob that is missing.
    fn load_action(
        &self,
        action_digest: &Digest,
    ) -> Result<Result<LoadedAction, Vec<Digest>>, Status> {
        let decode_error =
            |what: &str| Status::invalid_argument(format!("fake: undecodable {what}"));
        let Some(action_bytes) = self.blob(action_digest) else {
            return Ok(Err(vec![action_digest.clone()]));
        };
        let action = reapi::Action::decode(action_bytes).map_err(|_| decode_error("Action"))?;
        let mut missing = Vec::new();
        let command_digest = digest_of(action.command_digest.as_ref())?;
        let command = match self.blob(&command_digest) {
            Some(bytes) => {
                Some(reapi::Command::decode(bytes).map_err(|_| decode_error("Command"))?)
            }
            None => {
                missing.push(command_digest);
                None
            }
        };
        let mut inputs = BTreeMap::new();
        let mut pending = vec![(String::new(), digest_of(action.input_root_digest.as_ref())?)];
        while let Some((prefix, directory_digest)) = pending.pop() {
            let Some(bytes) = self.blob(&directory_digest) else {
                missing.push(directory_digest);
                continue;
            };
            let directory =
                reapi::Directory::decode(bytes).map_err(|_| decode_error("Directory"))?;
            for file in directory.files {
                let digest = digest_of(file.digest.as_ref())?;
                match self.blob(&digest) {
                    Some(contents) => {
                        inputs.insert(format!("{prefix}{}", file.name), contents);
                    }
                    None => missing.push(digest),
                }
            }
            for child in directory.directories {
                pending.push((
                    format!("{prefix}{}/", child.name),
                    digest_of(child.digest.as_ref())?,
                ));
            }
        }
        match command {
            Some(command) if missing.is_empty() => Ok(Ok(LoadedAction {
                action,
                command,
                inputs,
            })),
            _ => {
                missing.sort();
                missing.dedup();
                Ok(Err(missing))
            }
        }
    }

    fn new_operation_name(&self) -> String {
        format!(
            "operations/{}",
            self.state.next_operation.fetch_add(1, Ordering::Relaxed)
        )
    }
}

/// An operation in progress at `stage`.
fn progress(name: &str, action: &Digest, stage: reapi::execution_stage::Value) -> Operation {
    let metadata = reapi::ExecuteOperationMetadata {
        stage: stage as i32,
        action_digest: Some(action.to_proto()),
        ..Default::default()
    };
    Operation {
        name: name.to_owned(),
        metadata: Some(Any {
            type_url: EXECUTE_METADATA_TYPE.to_owned(),
            value: metadata.encode_to_vec(),
        }),
        done: false,
        result: None,
    }
}

/// A done operation answering `response`.
fn finished(name: &str, action: &Digest, response: &reapi::ExecuteResponse) -> Operation {
    Operation {
        done: true,
        result: Some(operation::Result::Response(Any {
            type_url: EXECUTE_RESPONSE_TYPE.to_owned(),
            value: response.encode_to_vec(),
        })),
        ..progress(name, action, reapi::execution_stage::Value::Completed)
    }
}

/// The `FAILED_PRECONDITION` response naming missing blobs.
fn missing_response(missing: &[Digest]) -> reapi::ExecuteResponse {
    let failure = PreconditionFailure {
        violations: missing
            .iter()
            .map(|digest| Violation {
                r#type: MISSING_VIOLATION.to_owned(),
                subject: blob_subject(digest),
                description: String::new(),
            })
            .collect(),
    };
    reapi::ExecuteResponse {
        status: Some(rpc::Status {
            code: StatusCode::FAILED_PRECONDITION.0,
            message: format!("fake: {} input blobs are missing", missing.len()),
            details: vec![Any {
                type_url: PRECONDITION_FAILURE_TYPE.to_owned(),
                value: failure.encode_to_vec(),
            }],
        }),
        ..Default::default()
    }
}

/// A stream of the given operations.
fn stream_of(operations: Vec<Operation>) -> BoxStream<Operation> {
    Box::pin(tokio_stream::iter(operations.into_iter().map(Ok)))
}

/// A stream following an operation from its current message until done.
fn follow(mut updates: watch::Receiver<Operation>) -> BoxStream<Operation> {
    let (sender, receiver) = mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let operation = updates.borrow_and_update().clone();
            let done = operation.done;
            if sender.send(Ok(operation)).await.is_err() || done {
                return;
            }
            if updates.changed().await.is_err() {
                return;
            }
        }
    });
    Box::pin(ReceiverStream::new(receiver))
}

#[tonic::async_trait]
impl Execution for FakeService {
    type ExecuteStream = BoxStream<Operation>;

    async fn execute(
        &self,
        request: Request<reapi::ExecuteRequest>,
    ) -> Result<Response<Self::ExecuteStream>, Status> {
        self.enter(Rpc::Execute)?;
        let request = request.into_inner();
        let action = digest_of(request.action_digest.as_ref())?;
        let name = self.new_operation_name();
        self.state.record(FakeCall::Execute {
            action: action.clone(),
            priority: request.execution_policy.map_or(0, |policy| policy.priority),
            results_cache_priority: request
                .results_cache_policy
                .map_or(0, |policy| policy.priority),
            skip_cache_lookup: request.skip_cache_lookup,
            operation: name.clone(),
        });
        let loaded = match self.load_action(&action)? {
            Ok(loaded) => loaded,
            Err(missing) => {
                let response = missing_response(&missing);
                return Ok(Response::new(stream_of(vec![finished(
                    &name, &action, &response,
                )])));
            }
        };
        if !request.skip_cache_lookup {
            let cached = self.state.action_cache.lock().get(&action).cloned();
            if let Some(result) = cached {
                let response = reapi::ExecuteResponse {
                    result: Some(result),
                    cached_result: true,
                    status: ok_status(),
                    ..Default::default()
                };
                return Ok(Response::new(stream_of(vec![finished(
                    &name, &action, &response,
                )])));
            }
        }
        let queued = progress(&name, &action, reapi::execution_stage::Value::Queued);
        let (updates, following) = watch::channel(queued.clone());
        let entry = Arc::new(OperationEntry {
            updates,
            cancelled: Default::default(),
            cancel: Notify::new(),
            release: Notify::new(),
        });
        self.state
            .operations
            .lock()
            .insert(name.clone(), Arc::clone(&entry));
        let drop_stream = take(&mut self.state.faults.lock().drop_execute_streams);
        let inline = request.inline_stdout && self.state.behaviour.inline_streams;
        tokio::spawn(run_execution(
            Arc::clone(&self.state),
            entry,
            name,
            action,
            loaded,
            inline,
        ));
        let stream = if drop_stream {
            stream_of(vec![queued])
        } else {
            follow(following)
        };
        Ok(Response::new(stream))
    }

    type WaitExecutionStream = BoxStream<Operation>;

    async fn wait_execution(
        &self,
        request: Request<reapi::WaitExecutionRequest>,
    ) -> Result<Response<Self::WaitExecutionStream>, Status> {
        self.enter(Rpc::WaitExecution)?;
        let name = request.into_inner().name;
        self.state.record(FakeCall::WaitExecution {
            operation: name.clone(),
        });
        let entry = self.state.operations.lock().get(&name).cloned();
        let entry = entry.ok_or_else(|| Status::not_found(format!("fake: no operation {name}")))?;
        Ok(Response::new(follow(entry.updates.subscribe())))
    }
}

/// One execution, from held to done (or cancelled).
async fn run_execution(
    state: Arc<State>,
    entry: Arc<OperationEntry>,
    name: String,
    action_digest: Digest,
    loaded: LoadedAction,
    inline_streams: bool,
) {
    let cancelled = |entry: &OperationEntry| entry.cancelled.load(Ordering::Acquire);
    let publish_cancelled = |entry: &OperationEntry| {
        entry.updates.send_replace(Operation {
            done: true,
            result: Some(operation::Result::Error(rpc::Status {
                code: StatusCode::CANCELLED.0,
                message: "fake: cancelled".to_owned(),
                details: Vec::new(),
            })),
            ..progress(
                &name,
                &action_digest,
                reapi::execution_stage::Value::Completed,
            )
        });
    };
    if state.faults.lock().hold_executions {
        state.held.lock().push(name.clone());
        state.held_changed.notify_all();
        tokio::select! {
            () = entry.release.notified() => {}
            () = entry.cancel.notified() => {}
        }
        state.held.lock().retain(|held| *held != name);
    }
    if cancelled(&entry) {
        publish_cancelled(&entry);
        return;
    }
    entry.updates.send_replace(progress(
        &name,
        &action_digest,
        reapi::execution_stage::Value::Executing,
    ));

    let run = (state.behaviour.runner)(&loaded.command, &loaded.inputs);
    let timeout = loaded.action.timeout.as_ref().map(|timeout| {
        std::time::Duration::new(timeout.seconds.max(0) as u64, timeout.nanos.max(0) as u32)
    });
    let timed_out = timeout.is_some_and(|timeout| run.delay > timeout);
    let wait = if timed_out {
        timeout.unwrap_or_default()
    } else {
        run.delay
    };
    if !wait.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = entry.cancel.notified() => {}
        }
    }
    if cancelled(&entry) {
        publish_cancelled(&entry);
        return;
    }
    if timed_out {
        let response = reapi::ExecuteResponse {
            status: status(StatusCode::DEADLINE_EXCEEDED, "fake: the action timed out"),
            ..Default::default()
        };
        entry
            .updates
            .send_replace(finished(&name, &action_digest, &response));
        return;
    }

    let lose_outputs = state.faults.lock().lose_outputs;
    let store = |data: &Bytes| -> reapi::Digest {
        let digest = Digest::of(data);
        if !digest.is_empty_blob() {
            state.cas.lock().insert(digest.clone(), data.clone());
        }
        digest.to_proto()
    };
    #[allow(deprecated)] // older clients name outputs in `output_files` only
    let declared = if loaded.command.output_paths.is_empty() {
        &loaded.command.output_files
    } else {
        &loaded.command.output_paths
    };
    let output_files = run
        .outputs
        .iter()
        .filter(|(path, _)| declared.contains(path))
        .map(|(path, data)| reapi::OutputFile {
            path: path.clone(),
            digest: Some(if lose_outputs {
                Digest::of(data).to_proto()
            } else {
                store(data)
            }),
            ..Default::default()
        })
        .collect();
    let mut result = reapi::ActionResult {
        output_files,
        exit_code: run.exit_code,
        stdout_digest: Some(store(&run.stdout)),
        stderr_digest: Some(store(&run.stderr)),
        ..Default::default()
    };
    if !loaded.action.do_not_cache && run.exit_code == 0 {
        state
            .action_cache
            .lock()
            .insert(action_digest.clone(), result.clone());
    }
    if inline_streams {
        result.stdout_raw = run.stdout.to_vec();
        result.stderr_raw = run.stderr.to_vec();
    }
    let response = reapi::ExecuteResponse {
        result: Some(result),
        status: ok_status(),
        ..Default::default()
    };
    entry
        .updates
        .send_replace(finished(&name, &action_digest, &response));
}

#[tonic::async_trait]
impl Operations for FakeService {
    async fn list_operations(
        &self,
        _request: Request<ListOperationsRequest>,
    ) -> Result<Response<ListOperationsResponse>, Status> {
        Err(Status::unimplemented("fake: ListOperations"))
    }

    async fn get_operation(
        &self,
        _request: Request<GetOperationRequest>,
    ) -> Result<Response<Operation>, Status> {
        Err(Status::unimplemented("fake: GetOperation"))
    }

    async fn delete_operation(
        &self,
        _request: Request<DeleteOperationRequest>,
    ) -> Result<Response<Empty>, Status> {
        Err(Status::unimplemented("fake: DeleteOperation"))
    }

    async fn cancel_operation(
        &self,
        request: Request<CancelOperationRequest>,
    ) -> Result<Response<Empty>, Status> {
        self.enter(Rpc::CancelOperation)?;
        let name = request.into_inner().name;
        let entry = self.state.operations.lock().get(&name).cloned();
        // Recorded after the effect, so a test that sees the call sees the
        // operation cancelled.
        if let Some(entry) = &entry
            && !entry.cancelled.swap(true, Ordering::AcqRel)
        {
            entry.cancel.notify_one();
        }
        self.state.record(FakeCall::CancelOperation {
            operation: name.clone(),
        });
        entry.ok_or_else(|| Status::not_found(format!("fake: no operation {name}")))?;
        Ok(Response::new(Empty {}))
    }

    async fn wait_operation(
        &self,
        _request: Request<WaitOperationRequest>,
    ) -> Result<Response<Operation>, Status> {
        Err(Status::unimplemented("fake: WaitOperation"))
    }
}
