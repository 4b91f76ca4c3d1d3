// Package demo is the registry the example Lambda serves: an order workflow
// like the quickstart's, and small workflows that exercise each part of the
// runtime end to end (the integration suite starts them through a
// client.Client on the same World; handler's tests run Serial and FanOut
// on the local world).
package demo
