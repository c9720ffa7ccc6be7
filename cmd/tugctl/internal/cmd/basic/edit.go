package basic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// edit is kubectl's: the objects go to a temporary file as YAML (or
// JSON) under a comment header, the user's editor opens it, and what the
// user saved is sent as the strategic merge patch from the object as read
// to the object as edited (cli.SendChange). When the saved file does not
// parse or the apiserver refuses a change, the file is opened again — the
// user's text as saved, with the errors in the header — until it saves
// cleanly, or the user saves it unchanged: then the edit is cancelled,
// the file is kept, and its path printed, so nothing typed is lost.

const editHeader = `# Please edit the object below. Lines beginning with a '#' will be ignored,
# and an empty file will abort the edit. If an error occurs while saving this file will be
# reopened with the relevant failures.
#
`

type editFlags struct {
	sel    cli.SelectFlags
	output string
}

func newEditCommand(o *cli.Options) *cobra.Command {
	f := &editFlags{}
	cmd := &cobra.Command{
		Use:   "edit KIND NAME...|KIND/NAME...|-f FILE [-o yaml|json]",
		Short: "Edit objects in your editor and save the changes",
		Long: `Open the objects in $KUBE_EDITOR, else $EDITOR, else vi, as YAML (-o json:
JSON), and send what you change when you save and quit. Lines starting
with # are ignored; saving an empty file, or the file unchanged, cancels.

If the saved file does not parse, or the apiserver refuses a change (an
invalid field, a field that may not change), the editor opens again with
your text as you saved it and the errors at the top, so you fix them
rather than type the change again. Saving that file unchanged gives up:
the file is kept and its path printed, and nothing more is sent. Only the
fields you changed are sent (a strategic merge patch), so changes others
make meanwhile to the rest of the object are kept.`,
		Example: `  tugctl edit deploy/web
  KUBE_EDITOR="code --wait" tugctl edit svc web -o json`,
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEdit(cmd.Context(), o, args, f)
		},
	}
	f.sel.Files.Register(cmd, "naming the objects to edit")
	cmd.Flags().StringVarP(&f.output, "output", "o", "yaml", "the format to edit: yaml or json")
	return cmd
}

// editor is the command line of the user's editor and the file to open.
func editor(o *cli.Options, file string) *exec.Cmd {
	ed := "vi"
	for _, env := range []string{"KUBE_EDITOR", "EDITOR"} {
		if v := strings.TrimSpace(o.Getenv(env)); v != "" {
			ed = v
			break
		}
	}
	args := strings.Fields(ed)
	cmd := exec.Command(args[0], append(args[1:], file)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.In, o.Out, o.ErrOut
	return cmd
}

func runEdit(ctx context.Context, o *cli.Options, args []string, f *editFlags) error {
	format, err := manifest.ParseFormat(f.output)
	if err != nil {
		return fmt.Errorf("--output %q: want yaml or json", f.output)
	}
	if len(args) == 0 && len(f.sel.Files.Files) == 0 {
		return fmt.Errorf("name the objects to edit: KIND NAME, KIND/NAME or -f FILE")
	}
	targets, missing, err := o.Select(ctx, args, f.sel)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return cli.ErrReported
	}
	objs := make([]v1.Object, len(targets))
	for i, t := range targets {
		objs[i] = t.Obj
	}
	// As kubectl: managedFields are not edited (an update that leaves
	// them out keeps them).
	objs = printers.WithoutManagedFields(objs)
	var body []byte
	if len(objs) == 1 {
		body, err = manifest.Marshal(objs[0], format)
	} else {
		body, err = manifest.MarshalList(objs, format)
	}
	if err != nil {
		return err
	}
	file, err := os.CreateTemp("", "tugctl-edit-*."+f.output)
	if err != nil {
		return err
	}
	path := file.Name()
	file.Close()
	original := body
	var reasons []editReason // what went wrong with the last save
	var last []byte          // what the user saved last, to tell "unchanged"
	for {
		text := []byte(editHeader)
		for _, r := range reasons {
			text = append(text, commentLines(r.detail)...)
		}
		if len(reasons) > 0 {
			text = append(text, "#\n"...)
		}
		text = append(text, body...)
		if err := os.WriteFile(path, text, 0o600); err != nil {
			return err
		}
		if err := editor(o, path).Run(); err != nil {
			return fmt.Errorf("the editor failed (set $KUBE_EDITOR or $EDITOR): %v; your file is %s", err, path)
		}
		saved, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		edited := stripComments(saved)
		switch {
		case len(reasons) > 0 && bytes.Equal(edited, stripComments(last)):
			for _, r := range reasons {
				fmt.Fprintf(o.ErrOut, "error: %s\n", r.summary)
			}
			fmt.Fprintf(o.ErrOut, "A copy of your changes has been stored to %q\n", path)
			return fmt.Errorf("Edit cancelled, no valid changes were saved.")
		case bytes.Equal(edited, stripComments(original)):
			os.Remove(path)
			fmt.Fprintln(o.ErrOut, "Edit cancelled, no changes made.")
			return nil
		case len(bytes.TrimSpace(edited)) == 0:
			os.Remove(path)
			fmt.Fprintln(o.ErrOut, "Edit cancelled, saved file was empty.")
			return nil
		}
		last, body = saved, edited
		reasons = saveEdits(ctx, o, path, edited, targets)
		if len(reasons) == 0 {
			os.Remove(path)
			break
		}
	}
	if missing {
		return cli.ErrReported
	}
	return nil
}

// editReason is one thing wrong with a save: a line for the terminal when
// the edit is given up, and the text for the file's header.
type editReason struct {
	summary, detail string
}

// saveEdits sends the changes of the edited text to each target and
// returns what went wrong: a syntax error, or per object the apiserver's
// refusal with the fields it names.
func saveEdits(ctx context.Context, o *cli.Options, path string, edited []byte, targets []cli.Target) []editReason {
	objs, err := manifest.Decode(path, edited)
	if err != nil {
		return []editReason{{"the edited file had a syntax error: " + err.Error(), "The edited file had a syntax error: " + err.Error()}}
	}
	var reasons []editReason
	for _, mo := range objs {
		m := mo.Object.GetMetadata()
		var t *cli.Target
		for i, c := range targets {
			cm := c.Obj.GetMetadata()
			if c.Kind == mo.Kind && cm.GetName() == m.GetName() && (m.GetNamespace() == "" || cm.GetNamespace() == m.GetNamespace()) {
				t = &targets[i]
			}
		}
		if t == nil {
			msg := fmt.Sprintf("%s/%s: at least one of apiVersion, kind and name was changed (edit changes objects; it does not make new ones)", strings.ToLower(mo.Kind.Name), m.GetName())
			reasons = append(reasons, editReason{msg, msg})
			continue
		}
		v1.Meta(mo.Object).Namespace = t.Obj.GetMetadata().GetNamespace()
		after, changed, err := o.SendChange(ctx, *t, mo.Object, cli.WriteOptions{})
		if err != nil {
			reasons = append(reasons, editFailure(*t, err))
			continue
		}
		t.Obj = after // a later round patches from what is stored now
		if changed {
			fmt.Fprintf(o.Out, "%s edited\n", printers.ObjectName(t.Kind, after))
		}
	}
	return reasons
}

// editFailure is kubectl's header text for a refused object:
//
//	deployments.apps "web" was not valid:
//	* spec.replicas: must be >= 0
func editFailure(t cli.Target, err error) editReason {
	name := fmt.Sprintf("%s %q", printers.QualifiedPlural(t.Kind), t.Obj.GetMetadata().GetName())
	var ae *apierrors.Error
	if errors.As(err, &ae) && len(ae.Fields) > 0 {
		s := name + " was not valid:"
		for _, fe := range ae.Fields {
			s += "\n* " + fe.String()
		}
		return editReason{name + " is invalid", s}
	}
	return editReason{fmt.Sprintf("%s: %v", name, err), fmt.Sprintf("%s could not be saved:\n* %v", name, err)}
}

// commentLines turns text into "# " lines.
func commentLines(s string) []byte {
	var b bytes.Buffer
	for _, l := range strings.Split(s, "\n") {
		b.WriteString("# " + l + "\n")
	}
	return b.Bytes()
}

// stripComments drops the lines that start with '#' (after blanks).
func stripComments(b []byte) []byte {
	var out bytes.Buffer
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			continue
		}
		out.Write(l)
	}
	return out.Bytes()
}
