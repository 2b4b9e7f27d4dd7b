// Project secrets: names, values read from stdin (never from argv), and the
// store as the preparer's execution.Projects.

package projects

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/store"
)

// ValidSecretKey accepts environment variable names that may reach an
// agent (else ErrUsage).
func ValidSecretKey(k string) error {
	if !secretKey.MatchString(k) {
		return fmt.Errorf("%w: project secret: invalid name %q (an environment variable name: letters, digits, '_', not starting with a digit)", ErrUsage, k)
	}
	if procrun.IsBotSecret(k) {
		return fmt.Errorf("%w: project secret: %s is reserved for the bot's own credentials (SLACK_*, MATRIX_*, THREADLINE_*, DATABASE_URL never reach an agent); choose another name", ErrUsage, k)
	}
	return nil
}

// ReadSecret reads the value of key from stdin: all of it, without one
// trailing newline. On a terminal it asks for one line on stderr.
func ReadSecret(stdin io.Reader, stderr io.Writer, key string) (string, error) {
	if f, ok := stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintf(stderr, "value of %s (one line; it is not printed back): ", key)
			line, err := bufio.NewReader(io.LimitReader(stdin, MaxSecretBytes)).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return "", err
			}
			return finishSecret(strings.TrimRight(line, "\r\n"), key)
		}
	}
	b, err := io.ReadAll(io.LimitReader(stdin, MaxSecretBytes+1))
	if err != nil {
		return "", fmt.Errorf("project secret: read the value from stdin: %w", err)
	}
	if len(b) > MaxSecretBytes {
		return "", fmt.Errorf("project secret: the value of %s is longer than %d bytes", key, MaxSecretBytes)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	return finishSecret(v, key)
}

func finishSecret(v, key string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("project secret: empty value for %s (pipe it on stdin: threadline project secret set PROJECT %s < file)", key, key)
	}
	if strings.ContainsRune(v, 0) {
		return "", fmt.Errorf("project secret: the value of %s holds a NUL byte", key)
	}
	return v, nil
}

// exists fails unless project exists.
func (a Admin) exists(ctx context.Context, project string) error {
	if _, err := a.St.GetProject(ctx, project); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("project secret: no project %s", project)
	} else if err != nil {
		return err
	}
	return nil
}

// SetSecret sets a project's secret key to value.
func (a Admin) SetSecret(ctx context.Context, project, key, value string) error {
	if err := a.exists(ctx, project); err != nil {
		return err
	}
	if err := a.St.SetProjectSecret(ctx, project, key, value); err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "secret %s of project %s set (%d bytes)\n", key, project, len(value))
	return nil
}

// UnsetSecret removes a project's secret key.
func (a Admin) UnsetSecret(ctx context.Context, project, key string) error {
	if err := a.exists(ctx, project); err != nil {
		return err
	}
	if err := a.St.DeleteProjectSecret(ctx, project, key); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("project %s has no secret %s", project, key)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "secret %s of project %s removed\n", key, project)
	return nil
}

// ListSecrets prints the names (never the values) of a project's secrets.
func (a Admin) ListSecrets(ctx context.Context, project string) error {
	if err := a.exists(ctx, project); err != nil {
		return err
	}
	names, err := a.St.ProjectSecretNames(ctx, project)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintf(a.Out, "project %s has no secrets\n", project)
	}
	for _, n := range names {
		fmt.Fprintln(a.Out, n)
	}
	return nil
}

// ForPreparer is the store as execution.Projects.
type ForPreparer struct {
	St *store.Store
	// Redact learns the secrets loaded for runs, for outbound redaction.
	Redact *redact.Redactor
}

var _ execution.Projects = ForPreparer{}

// Project is the stored project name.
func (p ForPreparer) Project(ctx context.Context, name string) (execution.Project, error) {
	sp, err := p.St.GetProject(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return execution.Project{}, fmt.Errorf("%w (add it with: threadline project add %s --container C)", execution.ErrProjectNotFound, name)
	}
	if err != nil {
		return execution.Project{}, err
	}
	return execution.Project{Name: sp.Name, Container: sp.Container, Image: sp.Image, Workspace: sp.Workspace, Status: sp.Status}, nil
}

// ProjectSecrets loads a project's secrets; each joins the redactor.
func (p ForPreparer) ProjectSecrets(ctx context.Context, name string) ([]agent.EnvVar, error) {
	secrets, err := p.St.ProjectSecrets(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]agent.EnvVar, len(secrets))
	for i, s := range secrets {
		out[i] = agent.EnvVar{Key: s.Name, Value: s.Value}
		if p.Redact != nil {
			// Whatever the agent prints of them is scrubbed before it is posted.
			p.Redact.Add(s.Value)
		}
	}
	return out, nil
}

// SetProjectStatus records the container's last known status.
func (p ForPreparer) SetProjectStatus(ctx context.Context, name, status string) error {
	return p.St.SetProjectStatus(ctx, name, status)
}
