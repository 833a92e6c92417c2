//go:build !unix

package diskspace

import "errors"

func free(string) (int64, error) { return 0, errors.ErrUnsupported }
