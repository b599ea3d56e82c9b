// Package pages writes the pages over many runs: a lock's report card
// (suite.md/html/json, junit.xml), the cards side by side and their summary
// in the README, the claims matrix (claims.md), and index.html over a
// report root (runs, cards, hunts, campaigns). It reads plain data (cards,
// campaign.json, report.json files) and builds on package report's document;
// its pictures are drawn only when a drawer is linked (package plots).
package pages
