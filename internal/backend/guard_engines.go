package backend

// keyLonghornV2 is the Longhorn chart's value that turns its v2 (SPDK) data engine on: null by
// default, Longhorn's own default then applies, off (values.yaml of every chart from 1.7.0 to
// 1.12.1; the v2 volumes it serves have spec.dataEngine v2, guard_crs.go).
const keyLonghornV2 = "defaultSettings.v2DataEngine"

// engineOn reports whether a chart's dependency condition (an engine's toggle) is true for an
// install of the chart with values: the user-supplied values first, then the chart archive's own
// values.yaml (chartValues, the defaults Helm merges them onto), and only where the archive is
// not known (nil) the table's default for the key (false for a key the table does not list).
// The table's defaults are what the provider verified against the real charts; the archive is
// what is installed, and a chart that turns an engine on or off by default differs from them.
func engineOn(r chartRange, condition string, chartValues, values map[string]any) bool {
	def := false
	if chartValues != nil {
		def = lookupBool(chartValues, condition, false)
	} else if k, ok := r.key(condition); ok {
		if b, ok := k.Default.(bool); ok {
			def = b
		}
	}
	return lookupBool(values, condition, def)
}

// longhornV2On reports whether Longhorn's v2 data engine is on for an install with values over a
// chart whose values are chartValues (Longhorn settings are strings, "true", or booleans).
func longhornV2On(chartValues, values map[string]any) bool {
	return lookupBool(values, keyLonghornV2, lookupBool(chartValues, keyLonghornV2, false))
}
