package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// ErrReported is returned by commands that have already printed their
// errors: the exit status is 1 and nothing more is printed.
var ErrReported = errors.New("errors reported above")

// ExitCode is an error that only sets the exit status (exec passes the
// remote command's on; auth can-i exits 1 for "no"): nothing is printed.
type ExitCode int

func (e ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// ExactArgs is cobra.ExactArgs with a message naming what is missing.
func ExactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s: want %s, got %d arguments (see %s --help)", cmd.CommandPath(), what, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// ReportEach prints each error joined in err (errors.Join, nested) on
// o.ErrOut as its own "error: ..." line, as kubectl reports each refused
// document, and says whether there was one.
func (o *Options) ReportEach(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			o.ReportEach(e)
		}
		return true
	}
	fmt.Fprintf(o.ErrOut, "error: %v\n", err)
	return true
}
