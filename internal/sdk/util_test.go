package sdk_test

import "errors"

var errFailingChild = errors.New("child failed")

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
