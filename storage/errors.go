package storage

import (
	"errors"
	"fmt"
)

// ErrNotFound says the object does not exist.
var ErrNotFound = errors.New("not found")

// TooOldError says a revision is below the compacted revision, so the state
// at it is gone. The API answers 410 Gone.
type TooOldError struct {
	Requested, Compacted int64
}

func (e *TooOldError) Error() string {
	return fmt.Sprintf("too old resource version: %d (%d)", e.Requested, e.Compacted)
}

// TooLargeError says a revision is above the current revision.
type TooLargeError struct {
	Requested, Current int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("resource version %d is newer than the current revision %d", e.Requested, e.Current)
}

// InvalidError says the caller's input is malformed. The API answers 400.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Invalid makes an InvalidError.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// InvalidObjectError says Apply refused some objects of a batch, which it
// wrote without them: a member's object that storage cannot hold must not
// hold back the others. It reads as an InvalidError (IsInvalid), the first
// refusal, for callers that only know that.
type InvalidObjectError struct {
	Refused []RefusedObject
}

// RefusedObject is one object Apply did not write, and why.
type RefusedObject struct {
	NamespacedName
	Err *InvalidError
}

func (e *InvalidObjectError) Error() string {
	msg := fmt.Sprintf("%d objects refused: %q/%q: %v", len(e.Refused), e.Refused[0].Namespace, e.Refused[0].Name, e.Refused[0].Err)
	if len(e.Refused) > 1 {
		msg += ", ..."
	}
	return msg
}

// Unwrap returns the first refusal.
func (e *InvalidObjectError) Unwrap() error { return e.Refused[0].Err }

// IsInvalid reports whether err is an InvalidError.
func IsInvalid(err error) bool {
	var e *InvalidError
	return errors.As(err, &e)
}

// IsTooOld reports whether err is a TooOldError.
func IsTooOld(err error) bool {
	var e *TooOldError
	return errors.As(err, &e)
}
