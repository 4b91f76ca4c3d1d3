package workflow

// VersionFromBuild exposes versionFromBuild to the external tests.
var VersionFromBuild = versionFromBuild

// StreamNameOf is streamName, for tests that look at the World's streams.
func StreamNameOf(namespace string) string {
	n, err := streamName(namespace)
	if err != nil {
		panic(err)
	}
	return n
}
