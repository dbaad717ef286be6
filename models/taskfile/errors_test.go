package taskfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/nioc-gpu/nioc-gpu/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pointFile is a small valid task file; the error cases edit it. Line numbers matter.
const pointFile = `name = "point"
states = ["pos", "vel"]
controls = ["force"]
observations = 1
motor_noises = 1
observation_noises = 1
dt = 0.1
horizon = 10
x0 = [1, 0]

[constants]
k = 2

[[param]]
name = "cost"
default = 0.1
bounds = [0.01, 1]
scale = "log10"

[[param]]
name = "noise"
default = 0.1
bounds = [0.01, 1]
scale = "log10"

[model]
dynamics = [
  "pos + dt*vel",
  "vel + dt*force + noise*v1",
]
observation = ["pos + noise*w1"]
cost = "cost*square(force)"
final_cost = "k*square(pos) + square(vel)"
`

// TestDefinitionsUsedTwice: a definition used by several others is not a cycle.
func TestDefinitionsUsedTwice(t *testing.T) {
	text := strings.Replace(pointFile, "[model]", "[define]\nd = \"k*pos\"\nb = \"d + 1\"\nc = \"d * 2\"\na = \"b + c + d\"\n\n[model]", 1)
	text = strings.Replace(text, `final_cost = "k*square(pos) + square(vel)"`, `final_cost = "square(a) + square(vel)"`, 1)
	_, err := Parse("t.toml", []byte(text))
	require.NoError(t, err)
}

func TestPointFileIsValid(t *testing.T) {
	task, err := Parse("t.toml", []byte(pointFile))
	require.NoError(t, err)
	spec := task.Spec()
	assert.Equal(t, "point", spec.Name)
	assert.Equal(t, []string{"cost", "noise"}, spec.ParamNames())
	assert.Equal(t, DefaultTemperature, spec.Temperature)
	assert.Equal(t, "task file t.toml", spec.Description)
	assert.Equal(t, models.DefaultStateBound, spec.MaxState(), "the default plausible range of the states")
}

// TestStateBound: state_bound sets the plausible range of the task's state values.
func TestStateBound(t *testing.T) {
	task, err := Parse("t.toml", []byte(strings.Replace(pointFile, "horizon = 10", "horizon = 10\nstate_bound = 1e9", 1)))
	require.NoError(t, err)
	assert.Equal(t, 1e9, task.Spec().MaxState())
}

// TestPlanOver: plan_over chooses what the agent plans over in trials of other lengths.
func TestPlanOver(t *testing.T) {
	task, err := Parse("t.toml", []byte(pointFile))
	require.NoError(t, err)
	assert.Equal(t, models.HorizonTrial, task.Spec().PlanningHorizon(), "the default")
	task, err = Parse("t.toml", []byte(strings.Replace(pointFile, "horizon = 10", "horizon = 10\nplan_over = \"task\"", 1)))
	require.NoError(t, err)
	assert.Equal(t, models.HorizonTask, task.Spec().PlanningHorizon())
}

// TestErrorsNameFileLineColumn: every problem of a task file is an *Error whose message
// starts with file:line:column, pointing at the key, the value or the character of the
// expression at fault.
func TestErrorsNameFileLineColumn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string // edit of pointFile
		want     string
	}{
		{"TOML syntax error", `horizon = 10`, `horizon = = 10`, "t.toml:8:11: "},
		{"expression syntax error", `"vel + dt*force + noise*v1"`, `"vel + dt*force + noise*/v1"`, "t.toml:29:27: syntax error: expected operand, found '/'"},
		{"unknown symbol", `"pos + dt*vel"`, `"pos + dt*vell"`, `t.toml:28:13: unknown symbol "vell" (did you mean "vel"?)`},
		{"too few dynamics expressions", "  \"vel + dt*force + noise*v1\",\n", "", "t.toml:27:1: 1 dynamics expressions for 2 states"},
		{"too many observation expressions", `observation = ["pos + noise*w1"]`, `observation = ["pos + noise*w1", "vel"]`, "t.toml:31:1: 2 observation expressions, but observations = 1"},
		{"parameter without bounds", "bounds = [0.01, 1]\nscale = \"log10\"\n\n[[param]]\nname = \"noise\"", "scale = \"log10\"\n\n[[param]]\nname = \"noise\"", "t.toml:14:3: parameter cost has no bounds"},
		{"reversed bounds", `bounds = [0.01, 1]
scale = "log10"

[[param]]
name = "noise"`, `bounds = [1, 0.01]
scale = "log10"

[[param]]
name = "noise"`, "t.toml:17:1: parameter cost: bounds [1, 0.01] are reversed"},
		{"log scale with a non-positive bound", `bounds = [0.01, 1]
scale = "log10"

[[param]]
name = "noise"`, `bounds = [0, 1]
scale = "log10"

[[param]]
name = "noise"`, "t.toml:17:1: parameter cost: scale log10 needs bounds > 0"},
		{"non-smooth function", `cost = "cost*square(force)"`, `cost = "cost*abs(force)"`, "t.toml:32:14: non-smooth function abs is not allowed"},
		// More of what a user may get wrong.
		{"control in the observation", `"pos + noise*w1"`, `"pos + force + noise*w1"`, "t.toml:31:23: control force cannot appear in the observation"},
		{"noise beyond its dimension", `noise*v1"`, `noise*v2"`, "t.toml:29:27: there is no motor noise v2: the file declares 1, v1..v1"},
		{"unknown key", `horizon = 10`, `horizn = 10`, "t.toml:8:1: horizn: unknown field"},
		{"state_bound not positive", `horizon = 10`, "horizon = 10\nstate_bound = 0", "t.toml:9:15: state_bound must be a finite number > 0"},
		{"jitter not positive", `horizon = 10`, "horizon = 10\njitter = -1e-6", "t.toml:9:10: jitter must be a finite variance > 0"},
		{"linearize unknown", `horizon = 10`, "horizon = 10\nlinearize = \"trial\"", `t.toml:9:13: unknown linearize "trial"`},
		{"plan_over unknown", `horizon = 10`, "horizon = 10\nplan_over = \"subject\"", `t.toml:9:13: unknown plan_over "subject"`},
		{"timing unknown", `horizon = 10`, "horizon = 10\ntiming = \"see-act\"", `t.toml:9:10: unknown timing "see-act"`},
		{"missing key", `horizon = 10`, ``, "t.toml:1:1: missing key horizon"},
		{"power operator", `"k*square(pos) + square(vel)"`, `"k*pos^2 + square(vel)"`, "t.toml:33:20: operator ^ is not a power"},
		{"pow with a variable exponent", `"k*square(pos) + square(vel)"`, `"k*pow(pos, vel) + square(vel)"`, "t.toml:33:26: pow needs a constant exponent"},
		{"unknown function", `square(vel)"`, `sqr(vel)"`, `t.toml:33:31: unknown function "sqr"`},
		{"wrong number of arguments", `square(vel)"`, `atan2(vel)"`, "t.toml:33:31: atan2 takes 2 argument(s), got 1"},
		{"constant using a state", `k = 2`, `k = "2*pos"`, "t.toml:12:8: state pos cannot appear in a constant"},
		{"constant defined through itself", `k = 2`, `k = "2*k"`, "t.toml:12:8: constant k is defined through itself"},
		{"constants in a cycle", `k = 2`, "k = \"2*m\"\nm = \"k + 1\"", "t.toml:13:6: constants refer to each other in a cycle: k → m → k"},
		{"definition referring to itself", "[model]", "[define]\na = \"a + 1\"\n\n[model]", "t.toml:27:6: definition a refers to itself"},
		{"two definitions in a cycle", "[model]", "[define]\na = \"b + 1\"\nb = \"a * 2\"\n\n[model]",
			"t.toml:28:6: definitions refer to each other in a cycle: a → b → a"},
		{"three definitions in a cycle", "[model]", "[define]\na = \"b + 1\"\nb = \"c * 2\"\nc = \"pos - a\"\n\n[model]",
			"t.toml:29:12: definitions refer to each other in a cycle: a → b → c → a"},
		{"a constant and a definition in a cycle", "k = 2\n", "k = \"2*d\"\n\n[define]\nd = \"k + 1\"\n",
			"t.toml:15:6: constants and definitions refer to each other in a cycle: k → d → k"},
		{"name used twice", `name = "noise"`, `name = "cost"`, `t.toml:21:8: parameter name "cost" is already the name of a parameter`},
		{"parameter named temperature", `name = "noise"`, `name = "temperature"`, `t.toml:21:8: parameter name "temperature" is reserved`},
		{"reserved name", `states = ["pos", "vel"]`, `states = ["pos", "v1"]`, `t.toml:2:18: state name "v1" is reserved`},
		{"x0 of the wrong length", `x0 = [1, 0]`, `x0 = [1]`, "t.toml:9:1: x0 has 1 values for 2 states"},
		{"unknown planner", `horizon = 10`, "horizon = 10\nplanner = \"mpc\"", `t.toml:9:11: unknown planner "mpc"`},
		{"multi-line expression", `cost = "cost*square(force)"`, "cost = \"\"\"cost *\n  squar(force)\"\"\"", `t.toml:33:3: unknown function "squar"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(pointFile, tc.old, tc.new, 1)
			require.NotEqual(t, pointFile, text, "the edit applies")
			_, err := Parse("t.toml", []byte(text))
			require.Error(t, err)
			var fe *Error
			require.True(t, errors.As(err, &fe), "%T is an *Error", err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.want), "got  %s\nwant %s…", err, tc.want)
		})
	}
}
