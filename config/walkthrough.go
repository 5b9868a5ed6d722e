package config

// DefaultAskPerUserPerHour is ask.per_user_per_hour: the questions one person may ask on one
// pull request within an hour.
const DefaultAskPerUserPerHour = 5

// Walkthrough configures the walkthrough at the top of the advisory comment (lensgate's own
// keys). It never affects the gate.
type Walkthrough struct {
	// Enabled writes the walkthrough (default true).
	Enabled bool
}

// Ask configures the `/lensgate ask <question>` command (lensgate's own keys).
type Ask struct {
	// Enabled answers questions (default true). Without a model runtime the answer says that
	// no model is configured.
	Enabled bool
	// PerUserPerHour bounds the questions one person may ask on one pull request within an
	// hour; the ones beyond it are answered with the limit, without a model call.
	PerUserPerHour int
}

// walkthroughField is the schema entry of the walkthrough section.
func walkthroughField() *field {
	return sectionField("walkthrough",
		boolField("enabled", false, func(r *Repo, v bool) { r.Walkthrough.Enabled = v }),
	)
}

// askField is the schema entry of the ask section.
func askField() *field {
	return sectionField("ask",
		boolField("enabled", false, func(r *Repo, v bool) { r.Ask.Enabled = v }),
		intField("per_user_per_hour", false, 1, 1000, func(r *Repo, v int) { r.Ask.PerUserPerHour = v }),
	)
}
