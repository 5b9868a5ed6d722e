package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lensgate/lensgate/config"
	"github.com/lensgate/lensgate/review/runtime"
	"github.com/lensgate/lensgate/review/runtime/delegate"
)

// delegateRuntime builds the delegate runtime: the built-in codex preset and the operator's
// presets from runtimes.delegates.
func delegateRuntime(rc config.ServerRuntime) (*delegate.Runtime, error) {
	names := make([]string, 0, len(rc.Delegates))
	for n := range rc.Delegates {
		names = append(names, n)
	}
	slices.Sort(names)
	var presets []delegate.Preset
	for _, n := range names {
		d := rc.Delegates[n]
		if !config.ValidName(n) {
			return nil, fmt.Errorf("runtimes.delegates: preset %q: want a lower-case label such as copilot", n)
		}
		if _, clash := rc.Presets[n]; clash {
			return nil, fmt.Errorf("runtimes.delegates: preset %q is also in runtimes.presets", n)
		}
		via := d.Request
		if via == "" {
			via = delegate.RequestComment
		}
		p := delegate.Preset{
			Name:           n,
			Bot:            delegate.Bot{Login: d.Login, UserID: d.UserID, AppID: d.AppID, AppSlug: d.AppSlug},
			RequestText:    d.RequestText,
			RequestVia:     via,
			Reviewer:       d.Reviewer,
			Evidence:       d.Evidence,
			CleanHeadlines: d.CleanHeadlines,
			ReviewHeading:  strings.ReplaceAll(d.ReviewHeading, "\r\n", "\n"),
			ReviewedCommit: d.ReviewedCommit,
		}
		presets = append(presets, p)
	}
	rt, err := delegate.New(presets...)
	if err != nil {
		return nil, fmt.Errorf("runtimes.delegates: %w", err)
	}
	return rt, nil
}

// addDelegatePresets lets every delegate preset name the delegate runtime (already in reg),
// unless the operator mapped the name to another runtime on purpose.
func addDelegatePresets(reg *runtime.Registry, dl *delegate.Runtime, presets map[string]string) error {
	for _, n := range dl.PresetNames() {
		if _, taken := presets[n]; taken {
			continue
		}
		if err := reg.AddPreset(n, delegate.Name); err != nil {
			return err
		}
	}
	return nil
}
