package dynamoworld

// Hand-written checks of names and keys (no package-level regexps: compiling
// them cost every Lambda cold start about a millisecond and a half of init).

// validTableName reports whether s is a DynamoDB table name: 3 to 255 of
// a-z A-Z 0-9 _ . -.
func validTableName(s string) bool {
	if len(s) < 3 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLowerAlnum(c) && !(c >= 'A' && c <= 'Z') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// validBucketName reports whether s is an S3 bucket name as this package
// accepts it: 3 to 63 of a-z 0-9 . -, starting and ending with a letter or
// digit.
func validBucketName(s string) bool {
	if len(s) < 3 || len(s) > 63 || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isLowerAlnum(c) && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// validGSK reports whether s is a listing position as cursors carry it:
// 20 digits, '#', a four-letter ID prefix, '_' and a 26-character ULID
// (Crockford base 32, upper case).
func validGSK(s string) bool {
	if len(s) != 20+1+4+1+26 || s[20] != '#' || s[25] != '_' {
		return false
	}
	for i := 0; i < 20; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	for i := 21; i < 25; i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	for i := 26; i < len(s); i++ {
		if !isCrockford(s[i]) {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// isCrockford reports whether c is an upper-case Crockford base-32 digit
// (0-9, A-Z without I, L, O and U).
func isCrockford(c byte) bool {
	switch {
	case c >= '0' && c <= '9':
		return true
	case c < 'A' || c > 'Z':
		return false
	}
	return c != 'I' && c != 'L' && c != 'O' && c != 'U'
}
