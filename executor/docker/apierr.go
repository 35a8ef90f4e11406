package docker

import (
	"errors"
	"net/url"
	"strings"
)

// engineError is an engine client's error with the request's raw URL taken
// out of its text; it still unwraps to the original, so errors.Is finds
// context.DeadlineExceeded and the like.
type engineError struct {
	msg string
	err error
}

func (e *engineError) Error() string { return e.msg }
func (e *engineError) Unwrap() error { return e.err }

// inWords rewrites an engine client's error for people: the client reports
// a request that failed on its way (a deadline, a reset connection) as
// `Post "http://%2Fvar%2Frun%2Fdocker.sock/v1.41/...": context deadline
// exceeded`, which says nothing the caller's own words do not say better.
// The URL part becomes "the Docker engine did not answer in time" or "the
// request to the Docker engine failed". Other errors pass unchanged.
func inWords(err error) error {
	var ue *url.Error
	if err == nil || !errors.As(err, &ue) {
		return err
	}
	what := "the request to the Docker engine failed: " + ue.Err.Error()
	if ue.Timeout() {
		what = "the Docker engine did not answer in time (" + ue.Err.Error() + ")"
	}
	return &engineError{msg: strings.Replace(err.Error(), ue.Error(), what, 1), err: err}
}
