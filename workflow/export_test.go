package workflow

// VersionFromBuild exposes versionFromBuild to the external tests.
var VersionFromBuild = versionFromBuild
