package server

import "fmt"

// ErrorCode is the stable code of an API error, the "code" of the JSON
// {"error": {"code", "message"}} (api/openapi.yaml, components.schemas.Error,
// an enum; the Python client's errors.ERROR_CODES). Every code the server
// sends is a constant below and in errorCodes.
type ErrorCode string

// The API's error codes, by the HTTP status they are sent with.
const (
	// CodeBadBody (400): the request body could not be read.
	CodeBadBody ErrorCode = "bad_body"
	// CodeInvalidJSON (400): the body is empty or not the endpoint's JSON object.
	CodeInvalidJSON ErrorCode = "invalid_json"
	// CodeInvalidField (400): a field of the request has a value the API does not accept.
	CodeInvalidField ErrorCode = "invalid_field"
	// CodeInvalidArchive (400): an uploaded archive is not a tar or zip the server unpacks.
	CodeInvalidArchive ErrorCode = "invalid_archive"
	// CodeInvalidPath (400): a path of the request is not a valid sandbox path.
	CodeInvalidPath ErrorCode = "invalid_path"
	// CodeInvalidID (400): a session id is not 1 to 128 of A-Z a-z 0-9 . _ -.
	CodeInvalidID ErrorCode = "invalid_id"
	// CodePathOutsideSandbox (400): a sandbox path leads outside the sandbox.
	CodePathOutsideSandbox ErrorCode = "path_outside_sandbox"
	// CodeIsADirectory (400): a file was expected and the path is a directory.
	CodeIsADirectory ErrorCode = "is_a_directory"
	// CodeNotADirectory (400): a directory was expected and the path is not one.
	CodeNotADirectory ErrorCode = "not_a_directory"
	// CodeNotARegularFile (400): the path is not a regular file.
	CodeNotARegularFile ErrorCode = "not_a_regular_file"
	// CodeUnauthorized (401): missing or wrong bearer token.
	CodeUnauthorized ErrorCode = "unauthorized"
	// CodeReadDenied (403): the policy does not let the code read the source.
	CodeReadDenied ErrorCode = "read_denied"
	// CodeSourceUnreadable (403): the server cannot read the source of a copy.
	CodeSourceUnreadable ErrorCode = "source_unreadable"
	// CodeSymlinkRefused (403): a symlink on the path is refused, never followed.
	CodeSymlinkRefused ErrorCode = "symlink_refused"
	// CodeForbiddenHost (403): the Host header names no host the server serves (DNS rebinding).
	CodeForbiddenHost ErrorCode = "forbidden_host"
	// CodeCrossOrigin (403): a browser request from another origin.
	CodeCrossOrigin ErrorCode = "cross_origin"
	// CodeOtherUser (403): a loopback client of another local user.
	CodeOtherUser ErrorCode = "other_user"
	// CodeSessionNotFound (404): no session has this id on this cell.
	CodeSessionNotFound ErrorCode = "session_not_found"
	// CodeSessionDeleted (404): the session was deleted.
	CodeSessionDeleted ErrorCode = "session_deleted"
	// CodeFileNotFound (404): no such file in the sandbox.
	CodeFileNotFound ErrorCode = "file_not_found"
	// CodeSourceNotFound (404): the source of a copy does not exist.
	CodeSourceNotFound ErrorCode = "source_not_found"
	// CodeNoSuchEndpoint (404): no endpoint has this method and path.
	CodeNoSuchEndpoint ErrorCode = "no_such_endpoint"
	// CodeSessionBusy (409): the session is running another execution or a reset (requests are not queued).
	CodeSessionBusy ErrorCode = "session_busy"
	// CodeSessionExists (409): a session with this id exists.
	CodeSessionExists ErrorCode = "session_exists"
	// CodeDestinationIsDirectory (409): a copy's destination is a directory.
	CodeDestinationIsDirectory ErrorCode = "destination_is_directory"
	// CodeSourceChanged (409): a copy's source changed while it was copied.
	CodeSourceChanged ErrorCode = "source_changed"
	// CodeDestinationChanged (409): the session's code replaced the file while the server wrote it.
	CodeDestinationChanged ErrorCode = "destination_changed"
	// CodeSessionExpired (410): the session expired after its idle timeout.
	CodeSessionExpired ErrorCode = "session_expired"
	// CodeSessionLost (410): the session was lost when its cell stopped or was killed.
	CodeSessionLost ErrorCode = "session_lost"
	// CodeWrongCell (421): the session id was minted by another cell.
	CodeWrongCell ErrorCode = "wrong_cell"
	// CodeBodyTooLarge (413): the request body exceeds the server's cap.
	CodeBodyTooLarge ErrorCode = "body_too_large"
	// CodeCopyTooLarge (413): a copy exceeds the server's size cap.
	CodeCopyTooLarge ErrorCode = "copy_too_large"
	// CodeArchiveTooLarge (413): an archive exceeds the server's size or entry cap.
	CodeArchiveTooLarge ErrorCode = "archive_too_large"
	// CodeTooManySessions (429): the server holds its most sessions.
	CodeTooManySessions ErrorCode = "too_many_sessions"
	// CodeNoSpace (507): the disk has no room for the file.
	CodeNoSpace ErrorCode = "no_space"
	// CodeExecuteFailed (500): the request could not be handed to the worker.
	CodeExecuteFailed ErrorCode = "execute_failed"
	// CodeResetFailed (500): a reset failed.
	CodeResetFailed ErrorCode = "reset_failed"
	// CodeCopyFailed (500): a copy failed.
	CodeCopyFailed ErrorCode = "copy_failed"
	// CodeFileError (500): a file operation failed.
	CodeFileError ErrorCode = "file_error"
	// CodeSandboxUnavailable (500): the session's sandbox cannot be opened.
	CodeSandboxUnavailable ErrorCode = "sandbox_unavailable"
	// CodeInternal (500): an error of the server itself.
	CodeInternal ErrorCode = "internal"
	// CodeWorkerStartFailed (503): no worker could be started.
	CodeWorkerStartFailed ErrorCode = "worker_start_failed"
	// CodeCancelled (503): the request was cancelled.
	CodeCancelled ErrorCode = "cancelled"
	// CodeShuttingDown (503): the server is shutting down.
	CodeShuttingDown ErrorCode = "shutting_down"
	// CodeDraining (503): the cell is draining: it takes no new sessions.
	CodeDraining ErrorCode = "draining"
)

// errorCodes is every code the server can send, in the order above.
var errorCodes = []ErrorCode{
	CodeBadBody,
	CodeInvalidJSON,
	CodeInvalidField,
	CodeInvalidArchive,
	CodeInvalidPath,
	CodeInvalidID,
	CodePathOutsideSandbox,
	CodeIsADirectory,
	CodeNotADirectory,
	CodeNotARegularFile,
	CodeUnauthorized,
	CodeReadDenied,
	CodeSourceUnreadable,
	CodeSymlinkRefused,
	CodeForbiddenHost,
	CodeCrossOrigin,
	CodeOtherUser,
	CodeSessionNotFound,
	CodeSessionDeleted,
	CodeFileNotFound,
	CodeSourceNotFound,
	CodeNoSuchEndpoint,
	CodeSessionBusy,
	CodeSessionExists,
	CodeDestinationIsDirectory,
	CodeSourceChanged,
	CodeDestinationChanged,
	CodeSessionExpired,
	CodeSessionLost,
	CodeWrongCell,
	CodeBodyTooLarge,
	CodeCopyTooLarge,
	CodeArchiveTooLarge,
	CodeTooManySessions,
	CodeNoSpace,
	CodeExecuteFailed,
	CodeResetFailed,
	CodeCopyFailed,
	CodeFileError,
	CodeSandboxUnavailable,
	CodeInternal,
	CodeWorkerStartFailed,
	CodeCancelled,
	CodeShuttingDown,
	CodeDraining,
}

// ErrorCodes is every code the server can send. The slice is a copy.
func ErrorCodes() []ErrorCode { return append([]ErrorCode(nil), errorCodes...) }

// apiError is an error with its HTTP status and stable code.
type apiError struct {
	status int
	code   ErrorCode
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// errf is the error with status and code whose message is format's.
func errf(status int, code ErrorCode, format string, a ...any) *apiError {
	return &apiError{status, code, fmt.Sprintf(format, a...)}
}
