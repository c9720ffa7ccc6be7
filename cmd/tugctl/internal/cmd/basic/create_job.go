package basic

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// ManualJobAnnotation marks a Job started by hand from a CronJob, as
// kubectl marks it.
const ManualJobAnnotation = "cronjob.kubernetes.io/instantiate"

func newCreateJobCommand(o *cli.Options) *cobra.Command {
	g := &genFlags{}
	var image, from string
	cmd := &cobra.Command{
		Use:   "job NAME --image=IMAGE [-- COMMAND [ARGS...]] | job NAME --from=cronjob/CRONJOB",
		Short: "Create a Job: one pod of an image, or a run of a CronJob now",
		Long: `Create a Job that runs one pod (restartPolicy Never) of --image, with the
command after --; or, with --from=cronjob/NAME, a Job from the CronJob's
job template, owned by the CronJob and annotated
cronjob.kubernetes.io/instantiate=manual: a scheduled run started by hand.`,
		Example: "  tugctl create job once --image=busybox -- sh -c 'date; echo done'\n  tugctl create job backup-now --from=cronjob/backup",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, command, err := nameAndCommand(cmd, args)
			if err != nil {
				return err
			}
			switch {
			case image == "" && from == "", image != "" && from != "":
				return fmt.Errorf("either --image or --from must be specified (one of them)")
			case from != "":
				if len(command) > 0 {
					return fmt.Errorf("a command (after --) only goes with --image: --from takes the CronJob's")
				}
				job, err := jobFromCronJob(cmd, o, name, from)
				if err != nil {
					return err
				}
				return g.emit(cmd.Context(), o, job)
			}
			job := &v1.Job{
				Metadata: &v1.ObjectMeta{Name: name},
				Spec: &v1.JobSpec{Template: &v1.PodTemplateSpec{Spec: &v1.PodSpec{
					RestartPolicy: "Never",
					Containers:    []*v1.Container{{Name: name, Image: image, Command: command}},
				}}},
			}
			return g.emit(cmd.Context(), o, job)
		},
	}
	cmd.Flags().StringVar(&image, "image", "", "the image of the Job's container")
	cmd.Flags().StringVar(&from, "from", "", "cronjob/NAME: a Job from that CronJob's job template")
	g.register(cmd)
	return cmd
}

// jobFromCronJob is kubectl's Job for --from=cronjob/NAME.
func jobFromCronJob(cmd *cobra.Command, o *cli.Options, name, from string) (*v1.Job, error) {
	kind, cjName, ok := strings.Cut(from, "/")
	k, err := cli.LookupKind(kind)
	if !ok || cjName == "" || err != nil || k.Name != "CronJob" {
		return nil, fmt.Errorf("--from %q: want cronjob/NAME", from)
	}
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	ns, err := o.Namespace()
	if err != nil {
		return nil, err
	}
	cj, err := client.For[*v1.CronJob](c).Get(cmd.Context(), ns, cjName)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("--from %s: cronjobs.batch %q not found in namespace %q", from, cjName, ns)
	}
	if err != nil {
		return nil, err
	}
	tm := cj.GetSpec().GetJobTemplate().GetMetadata()
	job := &v1.Job{
		Metadata: &v1.ObjectMeta{
			Name:        name,
			Labels:      copyMap(tm.GetLabels()),
			Annotations: copyMap(tm.GetAnnotations()),
			OwnerReferences: []*v1.OwnerReference{{
				ApiVersion: "batch/v1", Kind: "CronJob", Name: cj.Metadata.Name, Uid: cj.Metadata.Uid, Controller: true,
			}},
		},
		Spec: proto.Clone(cj.GetSpec().GetJobTemplate().GetSpec()).(*v1.JobSpec),
	}
	job.Metadata.Annotations[ManualJobAnnotation] = "manual"
	if len(job.Metadata.Labels) == 0 {
		job.Metadata.Labels = nil
	}
	return job, nil
}
