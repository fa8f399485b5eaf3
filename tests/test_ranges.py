"""Tests for ``pinbench.registry.ranges``: npm / node-semver range semantics.

The tables follow node-semver's own fixtures (``test/fixtures/range-include.js``,
``range-exclude.js``, ``range-parse.js``), minus the ``loose`` rows, with the reason for each case
beside it; ``includePrerelease`` rows run with ``include_prerelease=True``. Hypothesis then checks
the algebra (intersection, union, narrowing, the string round trip) on small versions
(components 0..3, optional prereleases) so that the cases hit the boundaries.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pinbench.errors import RangeError, VersionError
from pinbench.registry.comparators import Comparator
from pinbench.registry.ranges import Range, max_satisfying, satisfying
from pinbench.registry.versions import Version, parse_version

# -- tables -------------------------------------------------------------------------------------

# (range, version, why the version is included)
INCLUDE: list[tuple[str, str, str]] = [
    ("1.0.0 - 2.0.0", "1.2.3", "inside a hyphen range"),
    ("^1.2.3+build", "1.2.3", "build metadata on the range is ignored"),
    ("^1.2.3+build", "1.3.0", "caret allows a minor bump"),
    ("1.2.3-pre+asdf - 2.4.3-pre+asdf", "1.2.3", "release above a prerelease lower bound"),
    ("1.2.3-pre+asdf - 2.4.3-pre+asdf", "1.2.3-pre.2", "prerelease of the lower bound's core"),
    ("1.2.3-pre+asdf - 2.4.3-pre+asdf", "2.4.3-alpha", "prerelease of the upper bound's core"),
    ("1.2.3+asdf - 2.4.3+asdf", "1.2.3", "hyphen bounds ignore build metadata"),
    ("1.0.0", "1.0.0", "a bare version is an exact match"),
    (">=*", "0.2.4", ">=* is any"),
    ("", "1.0.0", "the empty range is any"),
    ("*", "1.2.3", "star is any release"),
    (">=1.0.0", "1.0.0", ">= includes its bound"),
    (">=1.0.0", "1.0.1", ">= a patch above"),
    (">=1.0.0", "1.1.0", ">= a minor above"),
    (">1.0.0", "1.0.1", "> a patch above"),
    (">1.0.0", "1.1.0", "> a minor above"),
    ("<=2.0.0", "2.0.0", "<= includes its bound"),
    ("<=2.0.0", "1.9999.9999", "<= far below in minor/patch"),
    ("<=2.0.0", "0.2.9", "<= a major below"),
    ("<2.0.0", "1.9999.9999", "< just below the major"),
    ("<2.0.0", "0.2.9", "< well below"),
    (">= 1.0.0", "1.0.0", "space after the operator"),
    (">=  1.0.0", "1.0.1", "two spaces after the operator"),
    (">=   1.0.0", "1.1.0", "three spaces after the operator"),
    ("> 1.0.0", "1.0.1", "space after >"),
    (">  1.0.0", "1.1.0", "two spaces after >"),
    ("<=   2.0.0", "2.0.0", "spaces after <="),
    ("<= 2.0.0", "1.9999.9999", "space after <="),
    ("<=  2.0.0", "0.2.9", "two spaces after <="),
    ("<    2.0.0", "1.9999.9999", "four spaces after <"),
    ("<\t2.0.0", "0.2.9", "a tab after <"),
    (">=0.1.97", "0.1.97", ">= its bound in 0.x"),
    ("0.1.20 || 1.2.4", "1.2.4", "second alternative of ||"),
    (">=0.2.3 || <0.0.1", "0.0.0", "second alternative, below"),
    (">=0.2.3 || <0.0.1", "0.2.3", "first alternative, at its bound"),
    (">=0.2.3 || <0.0.1", "0.2.4", "first alternative, above"),
    ("||", "1.3.4", "|| of two empties is any"),
    ("2.x.x", "2.1.3", "x-range on minor and patch"),
    ("1.2.x", "1.2.3", "x-range on patch"),
    ("1.2.x || 2.x", "2.1.3", "x-range alternatives, second"),
    ("1.2.x || 2.x", "1.2.3", "x-range alternatives, first"),
    ("x", "1.2.3", "x alone is any"),
    ("2.*.*", "2.1.3", "* works like x"),
    ("1.2.*", "1.2.3", "* on patch"),
    ("1.2.* || 2.*", "2.1.3", "* alternatives, second"),
    ("1.2.* || 2.*", "1.2.3", "* alternatives, first"),
    ("2", "2.1.2", "a major alone is 2.x"),
    ("2.3", "2.3.1", "major.minor is 2.3.x"),
    ("~0.0.1", "0.0.1", "tilde includes its bound"),
    ("~0.0.1", "0.0.2", "tilde allows patch bumps, even in 0.0.x"),
    ("~x", "0.0.9", "~x is any"),
    ("~2", "2.0.9", "~2 is 2.x"),
    ("~2.4", "2.4.0", "~2.4 includes 2.4.0"),
    ("~2.4", "2.4.5", "~2.4 allows patch bumps"),
    ("~>3.2.1", "3.2.2", "~> is a synonym of ~"),
    ("~1", "1.2.3", "~1 allows minor bumps"),
    ("~>1", "1.2.3", "~>1 allows minor bumps"),
    ("~> 1", "1.2.3", "space after ~>"),
    ("~1.0", "1.0.2", "~1.0 allows patch bumps"),
    ("~ 1.0", "1.0.2", "space after ~"),
    ("~ 1.0.3", "1.0.12", "space after ~, full version"),
    (">=1", "1.0.0", ">= a partial version"),
    (">= 1", "1.0.0", ">= a partial version after a space"),
    ("<1.2", "1.1.1", "< a partial version"),
    ("< 1.2", "1.1.1", "< a partial version after a space"),
    ("~v0.5.4-pre", "0.5.5", "leading v after ~, patch above"),
    ("~v0.5.4-pre", "0.5.4", "the release of the prerelease bound"),
    ("=0.7.x", "0.7.2", "= with an x-range"),
    ("<=0.7.x", "0.7.2", "<= an x-range covers the whole minor"),
    (">=0.7.x", "0.7.2", ">= an x-range"),
    ("<=0.7.x", "0.6.2", "<= an x-range, below"),
    ("~1.2.1 >=1.2.3", "1.2.3", "tilde AND >="),
    ("~1.2.1 =1.2.3", "1.2.3", "tilde AND ="),
    ("~1.2.1 1.2.3", "1.2.3", "tilde AND a bare version"),
    ("~1.2.1 >=1.2.3 1.2.3", "1.2.3", "three comparators"),
    ("~1.2.1 1.2.3 >=1.2.3", "1.2.3", "three comparators, other order"),
    (">=1.2.1 1.2.3", "1.2.3", ">= AND a bare version"),
    ("1.2.3 >=1.2.1", "1.2.3", "a bare version AND >="),
    (">=1.2.3 >=1.2.1", "1.2.3", "two lower bounds"),
    (">=1.2.1 >=1.2.3", "1.2.3", "two lower bounds, other order"),
    (">=1.2", "1.2.8", ">=1.2 is >=1.2.0"),
    ("^1.2.3", "1.8.1", "caret allows minor bumps"),
    ("^0.1.2", "0.1.2", "caret in 0.x includes its bound"),
    ("^0.1", "0.1.2", "caret on 0.1"),
    ("^0.0.1", "0.0.1", "caret in 0.0.x pins the patch"),
    ("^1.2", "1.4.2", "caret on a partial version"),
    ("^1.2 ^1", "1.4.2", "two carets"),
    ("^1.2.3-alpha", "1.2.3-pre", "prerelease of the caret's own core"),
    ("^1.2.0-alpha", "1.2.0-pre", "prerelease of the caret's own core, x.y.0"),
    ("^0.0.1-alpha", "0.0.1-beta", "prerelease in 0.0.x"),
    ("^0.0.1-alpha", "0.0.1", "the release of the prerelease bound"),
    ("^0.1.1-alpha", "0.1.1-beta", "prerelease in 0.x"),
    ("^x", "1.2.3", "^x is any"),
    ("x - 1.0.0", "0.9.7", "hyphen with an open lower end"),
    ("x - 1.x", "0.9.7", "hyphen with an open lower end and an x upper end"),
    ("1.0.0 - x", "1.9.7", "hyphen with an open upper end"),
    ("1.x - x", "1.9.7", "hyphen with x on both ends"),
    ("<=7.x", "7.9.9", "<= a major x-range covers the major"),
    ("v1.2.3", "1.2.3", "a leading v"),
    ("=v1.2.3", "1.2.3", "= and a leading v"),
    ("1.2.3 - 2.3", "2.3.9", "hyphen with a partial upper end covers its minor"),
    ("1.2 - 2.3.4", "1.2.0", "hyphen with a partial lower end starts at .0"),
    (">=0.0.0-0", "0.0.0-alpha", "a 0.0.0 prerelease bound opens 0.0.0 prereleases"),
    ("^1.x.3", "1.9.0", "a number after x is ignored after ^ (node-semver does too)"),
]

# (range, version, why the version is excluded)
EXCLUDE: list[tuple[str, str, str]] = [
    ("1.0.0 - 2.0.0", "2.2.3", "above a hyphen range"),
    ("1.2.3+asdf - 2.4.3+asdf", "1.2.3-pre.2", "prerelease, and no bound names one"),
    ("1.2.3+asdf - 2.4.3+asdf", "2.4.3-alpha", "prerelease of the upper bound's core, not opened"),
    ("^1.2.3+build", "2.0.0", "caret excludes the next major"),
    ("^1.2.3+build", "1.2.0", "caret excludes what is below it"),
    ("^1.2.3", "1.2.3-pre", "prerelease below the caret's bound"),
    ("^1.2", "1.2.0-pre", "prerelease below ^1.2"),
    (">1.2", "1.3.0-beta", "prerelease, even though 1.3.0-beta > 1.2"),
    ("<=1.2.3", "1.2.3-beta", "prerelease not opened by <=1.2.3"),
    ("^1.2.3", "1.2.3-beta", "prerelease of the caret's core, not opened"),
    ("=0.7.x", "0.7.0-asdf", "prerelease in an x-range"),
    (">=0.7.x", "0.7.0-asdf", "prerelease in an open x-range"),
    ("1.0.0", "1.0.1", "a bare version is exact"),
    (">=1.0.0", "0.0.0", ">= excludes below, 0.0.0"),
    (">=1.0.0", "0.0.1", ">= excludes below, 0.0.1"),
    (">=1.0.0", "0.1.0", ">= excludes below, 0.1.0"),
    (">1.0.0", "0.0.1", "> excludes below, 0.0.1"),
    (">1.0.0", "0.1.0", "> excludes below, 0.1.0"),
    ("<=2.0.0", "3.0.0", "<= excludes above, major"),
    ("<=2.0.0", "2.9999.9999", "<= excludes above, minor"),
    ("<=2.0.0", "2.2.9", "<= excludes above, in the major"),
    ("<2.0.0", "2.9999.9999", "< excludes above"),
    ("<2.0.0", "2.2.9", "< excludes above, in the major"),
    (">=0.1.97", "0.1.93", ">= excludes below in 0.x"),
    ("0.1.20 || 1.2.4", "1.2.3", "in neither alternative"),
    (">=0.2.3 || <0.0.1", "0.0.3", "between the alternatives"),
    (">=0.2.3 || <0.0.1", "0.2.2", "just below the first alternative"),
    ("2.x.x", "1.1.3", "below the x-range"),
    ("2.x.x", "3.1.3", "above the x-range"),
    ("1.2.x", "1.3.3", "above the patch x-range"),
    ("1.2.x || 2.x", "3.1.3", "above both alternatives"),
    ("1.2.x || 2.x", "1.1.3", "below both alternatives"),
    ("2.*.*", "1.1.3", "below the * range"),
    ("2.*.*", "3.1.3", "above the * range"),
    ("1.2.*", "1.3.3", "above the patch * range"),
    ("1.2.* || 2.*", "3.1.3", "above both * alternatives"),
    ("1.2.* || 2.*", "1.1.3", "below both * alternatives"),
    ("2", "1.1.2", "below a major partial"),
    ("2.3", "2.4.1", "above a minor partial"),
    ("~0.0.1", "0.1.0-alpha", "prerelease of the next minor"),
    ("~0.0.1", "0.1.0", "tilde excludes the next minor"),
    ("~2.4", "2.5.0", "~2.4 excludes the next minor"),
    ("~2.4", "2.3.9", "~2.4 excludes below"),
    ("~>3.2.1", "3.3.2", "~> excludes the next minor"),
    ("~>3.2.1", "3.2.0", "~> excludes below"),
    ("~1", "0.2.3", "~1 excludes below"),
    ("~>1", "2.2.3", "~>1 excludes the next major"),
    ("~1.0", "1.1.0", "~1.0 excludes the next minor"),
    ("<1", "1.0.0", "<1 is <1.0.0-0"),
    (">=1.2", "1.1.1", ">=1.2 excludes 1.1.x"),
    ("~v0.5.4-beta", "0.5.4-alpha", "prerelease below the bound"),
    ("=0.7.x", "0.8.2", "above the = x-range"),
    (">=0.7.x", "0.6.2", "below the >= x-range"),
    ("<0.7.x", "0.7.2", "<0.7.x is <0.7.0-0"),
    ("<1.2.3", "1.2.3-beta", "prerelease of the bound's core, not opened by <"),
    ("=1.2.3", "1.2.3-beta", "= a release excludes its prereleases"),
    (">1.2", "1.2.8", ">1.2 is >=1.3.0"),
    ("^0.0.1", "0.0.2-alpha", "prerelease above ^0.0.1"),
    ("^0.0.1", "0.0.2", "^0.0.1 pins the patch"),
    ("^1.2.3", "2.0.0-alpha", "prerelease of the next major"),
    ("^1.2.3", "1.2.2", "below the caret"),
    ("^1.2", "1.1.9", "below ^1.2"),
    ("^1.0.0", "2.0.0-rc1", "prerelease of the next major, default mode"),
    ("*", "1.0.0-rc1", "star excludes prereleases"),
    ("1.2.3-alpha || *", "1.2.3-beta", "node-semver: a * alternative swallows the others"),
]

# (range, version, reason): include_prerelease=True (node-semver's includePrerelease)
INCLUDE_PRE: list[tuple[str, str, str]] = [
    ("2.x", "2.0.0-pre.0", "x-ranges start at -0 with include_prerelease"),
    ("2.x", "2.1.0-pre.0", "any prerelease inside the x-range"),
    ("*", "1.0.0-rc1", "star allows prereleases"),
    ("^1.0.0-0", "1.0.1-rc1", "prerelease inside a caret"),
    ("^1.0.0-rc2", "1.0.1-rc1", "prerelease of another core inside a caret"),
    ("^1.0.0", "1.0.1-rc1", "caret on a release allows prereleases above it"),
    ("^1.0.0", "1.1.0-rc1", "caret allows minor prereleases"),
    ("~1.2", "1.2.0-alpha", "partial tildes start at -0 (node-semver 7.8)"),
    ("1.0.0 - 2.0.0", "2.0.0-alpha", "hyphen ends become >=1.0.0-0 <2.0.1-0"),
    ("1.0.0 - 2.0.0", "1.0.0-rc.1", "hyphen lower end at -0"),
    ("1.2.3-alpha || *", "1.2.3-beta", "star allows everything"),
]

# (range, version, reason): include_prerelease=True
EXCLUDE_PRE: list[tuple[str, str, str]] = [
    ("2.x", "3.0.0-pre.0", "upper bounds stay at -0"),
    ("^1.0.0", "1.0.0-rc1", "a full-version caret keeps its lower bound"),
    ("^1.2.3-rc2", "2.0.0", "the next major is still out"),
    ("^1.0.0", "2.0.0-rc1", "prerelease of the next major"),
    ("~1.2.3", "1.2.3-alpha", "a full-version tilde keeps its lower bound"),
    ("<x", "0.0.0-0", "<x is the empty range"),
    ("1.0.0 - 2.0.0", "2.0.1-0", "hyphen upper end <2.0.1-0 is exclusive"),
    (">=0.0.0 <=0.0.0-beta", "0.0.0-alpha", ">=0.0.0 stays: only >=0.0.0-0 means *"),
]

# (range, str(Range.parse(range)), why)
PARSE: list[tuple[str, str, str]] = [
    ("1.0.0 - 2.0.0", ">=1.0.0 <=2.0.0", "full hyphen range"),
    ("1 - 2", ">=1.0.0 <3.0.0-0", "partial hyphen range covers the upper major"),
    ("1.0 - 2.0", ">=1.0.0 <2.1.0-0", "partial hyphen range covers the upper minor"),
    ("1.2 - 3.4.5", ">=1.2.0 <=3.4.5", "partial lower end"),
    ("1.2.3 - 3.4", ">=1.2.3 <3.5.0-0", "partial upper end"),
    ("1.2 - 3.4", ">=1.2.0 <3.5.0-0", "both ends partial"),
    ("1.0.0", "1.0.0", "a bare version"),
    ("=1.0.0", "1.0.0", "= prints as a bare version"),
    ("v1.0.0", "1.0.0", "a leading v is dropped"),
    (">=*", "*", ">=* is any"),
    ("", "*", "the empty range is any"),
    ("*", "*", "star"),
    ("x", "*", "x"),
    ("||", "*", "|| of empties"),
    ("1.2.3 ||", "*", "an empty alternative is any and swallows the rest (node-semver)"),
    (">=1.0.0", ">=1.0.0", ">= stays"),
    (">1.0.0", ">1.0.0", "> stays"),
    ("<=2.0.0", "<=2.0.0", "<= stays"),
    ("<2.0.0", "<2.0.0", "< stays"),
    (">= 1.0.0", ">=1.0.0", "space after the operator"),
    ("<\t2.0.0", "<2.0.0", "tab after the operator"),
    ("0.1.20 || 1.2.4", "0.1.20||1.2.4", "|| without spaces"),
    (">=0.2.3 || <0.0.1", ">=0.2.3||<0.0.1", "two alternatives"),
    ("2.x.x", ">=2.0.0 <3.0.0-0", "major x-range"),
    ("1.2.x", ">=1.2.0 <1.3.0-0", "minor x-range"),
    ("1.2.x || 2.x", ">=1.2.0 <1.3.0-0||>=2.0.0 <3.0.0-0", "x-range alternatives"),
    ("2.*.*", ">=2.0.0 <3.0.0-0", "* as x"),
    ("2", ">=2.0.0 <3.0.0-0", "a major alone"),
    ("2.3", ">=2.3.0 <2.4.0-0", "major.minor"),
    ("~2.4", ">=2.4.0 <2.5.0-0", "partial tilde"),
    ("~>3.2.1", ">=3.2.1 <3.3.0-0", "~> tilde"),
    ("~1", ">=1.0.0 <2.0.0-0", "major tilde"),
    ("~> 1", ">=1.0.0 <2.0.0-0", "~> then a space"),
    ("~ 1.0", ">=1.0.0 <1.1.0-0", "~ then a space"),
    ("~1.2.3-beta", ">=1.2.3-beta <1.3.0-0", "tilde keeps a prerelease lower bound"),
    ("^0", "<1.0.0-0", "^0: the >=0.0.0 lower bound is dropped"),
    ("^ 1", ">=1.0.0 <2.0.0-0", "^ then a space"),
    ("^0.1", ">=0.1.0 <0.2.0-0", "caret on 0.1"),
    ("^1.0", ">=1.0.0 <2.0.0-0", "caret on 1.0"),
    ("^1.2", ">=1.2.0 <2.0.0-0", "caret on 1.2"),
    ("^0.0.1", ">=0.0.1 <0.0.2-0", "caret in 0.0.x"),
    ("^0.0.1-beta", ">=0.0.1-beta <0.0.2-0", "caret in 0.0.x with a prerelease"),
    ("^0.1.2", ">=0.1.2 <0.2.0-0", "caret in 0.x"),
    ("^1.2.3", ">=1.2.3 <2.0.0-0", "caret"),
    ("^1.2.3-beta.4", ">=1.2.3-beta.4 <2.0.0-0", "caret with a prerelease"),
    ("^0.x", "<1.0.0-0", "caret on 0.x"),
    ("^1.2.3+build", ">=1.2.3 <2.0.0-0", "build metadata dropped"),
    ("<1", "<1.0.0-0", "< a major"),
    ("< 1", "<1.0.0-0", "< a major after a space"),
    (">=1", ">=1.0.0", ">= a major"),
    ("<1.2", "<1.2.0-0", "< a minor"),
    (">1", ">=2.0.0", "> a major is >= the next"),
    (">1.2", ">=1.3.0", "> a minor is >= the next"),
    ("<=1.2", "<1.3.0-0", "<= a minor is < the next"),
    ("=0.7.x", ">=0.7.0 <0.8.0-0", "= an x-range is the x-range"),
    ("^ 1.2 ^ 1", ">=1.2.0 <2.0.0-0 >=1.0.0", "duplicate comparators dropped"),
    (">X", "<0.0.0-0", ">X is the empty range"),
    ("<X", "<0.0.0-0", "<X is the empty range"),
    ("<x <* || >* 2.x", "<0.0.0-0", "all alternatives empty: the first stays"),
    (">x 2.x || * || <x", "*", "empty alternatives dropped, * swallows the rest"),
    (">=0.0.0", "*", ">=0.0.0 is any"),
    ("1.2.3 <0.0.0-0", "<0.0.0-0", "the empty comparator empties the set"),
    (">=1.2.3 >=1.2.3", ">=1.2.3", "exact duplicates dropped"),
]

# (range, the include_prerelease desugaring, why)
PARSE_PRE: list[tuple[str, str, str]] = [
    ("1.0.0 - 2.0.0", ">=1.0.0-0 <2.0.1-0", "hyphen ends open to prereleases"),
    ("1 - 2", ">=1.0.0-0 <3.0.0-0", "partial hyphen"),
    ("1.0 - 2.0", ">=1.0.0-0 <2.1.0-0", "partial hyphen on minors"),
    ("1.x", ">=1.0.0-0 <2.0.0-0", "x-range lower bound at -0"),
    ("^1.2", ">=1.2.0-0 <2.0.0-0", "partial caret lower bound at -0"),
    ("^1.2.3", ">=1.2.3 <2.0.0-0", "full caret unchanged"),
    ("~1.2", ">=1.2.0-0 <1.3.0-0", "partial tilde lower bound at -0"),
    (">=0.0.0-0", "*", ">=0.0.0-0 is any with include_prerelease"),
]

# (range, a fragment the error's reason must contain)
INVALID_RANGES: list[tuple[str, str]] = [
    (">=", "operator '>=' is not followed by a version"),
    ("1.2.3.4", "got 4 parts"),
    ("^^1", "'^^1'"),
    ("1.2.a", "patch 'a' is not a number"),
    (">=1.0 <", "operator '<' is not followed by a version"),
    ("abc", "major 'abc' is not a number"),
    ("1.2.3 -", "'-'"),
    ("- 1.2.3", "'-'"),
    ("1 - 2 - 3", "'-'"),
    ("1.2.3 - 2 >=1", "'-'"),
    (">01.02.03", "leading zero"),
    ("~1.2.3beta", "'3beta' is not a number"),
    ("1.2-beta", "a prerelease needs all of MAJOR.MINOR.PATCH"),
    ("1.2.3-", "prerelease is empty"),
    ("1.2.3-01", "leading zero"),
    ("1.2.3-be_ta", "'be_ta'"),
    ("1.2.3+b..c", "empty identifier"),
    ("1.x.3", "patch '3' follows a wildcard"),
    ("x.1", "minor '1' follows a wildcard"),
    ("|", "'|'"),
    ("1.2.3 | 2", "'|'"),
    ("==1.2.3", "'==1.2.3'"),
    ("^~1", "'^~1'"),
    ("<1.2.3 - 2", "bad version '<1.2.3' in hyphen range"),
    ("1.2.3, <2", "'1.2.3,'"),
    ("v", "missing version"),
    ("1 -2", "missing version"),
]

VALID_VERSIONS: list[tuple[str, Version]] = [
    ("0.0.0", Version(0, 0, 0)),
    ("1.2.3", Version(1, 2, 3)),
    ("10.20.30", Version(10, 20, 30)),
    ("1.0.0-alpha", Version(1, 0, 0, "alpha")),
    ("1.0.0-alpha.1", Version(1, 0, 0, "alpha.1")),
    ("1.0.0-0.3.7", Version(1, 0, 0, "0.3.7")),
    ("1.0.0-x.7.z.92", Version(1, 0, 0, "x.7.z.92")),
    ("1.0.0-x-y-z.--", Version(1, 0, 0, "x-y-z.--")),
    ("1.0.0+20130313144700", Version(1, 0, 0, None, "20130313144700")),
    ("1.0.0-beta+exp.sha.5114f85", Version(1, 0, 0, "beta", "exp.sha.5114f85")),
    ("1.0.0+21AF26D3----117B344092BD", Version(1, 0, 0, None, "21AF26D3----117B344092BD")),
    ("1.0.0-0a", Version(1, 0, 0, "0a")),
]

# (text, a fragment the error's reason must contain)
INVALID_VERSIONS: list[tuple[str, str]] = [
    ("", "empty string"),
    ("1", "expected MAJOR.MINOR.PATCH, got 1 part"),
    ("1.2", "expected MAJOR.MINOR.PATCH, got 2 parts"),
    ("1.2.3.4", "expected MAJOR.MINOR.PATCH, got 4 parts"),
    ("v1.2.3", "leading 'v'"),
    ("=1.2.3", "leading '='"),
    (" 1.2.3", "surrounding whitespace"),
    ("01.2.3", "major '01' has a leading zero"),
    ("1.02.3", "minor '02' has a leading zero"),
    ("1.2.x", "patch 'x' is not a number"),
    ("1..3", "minor is empty"),
    ("1.2.3-", "prerelease is empty"),
    ("1.2.3-01", "prerelease identifier '01' has a leading zero"),
    ("1.2.3-alpha..1", "empty identifier"),
    ("1.2.3-al_pha", "prerelease identifier 'al_pha' may only use [0-9A-Za-z-]"),
    ("1.2.3+", "build is empty"),
    ("1.2.3+a+b", "build identifier 'a+b'"),
    ("1.2.3beta", "patch '3beta' is not a number"),
    ("1.2.٣", "patch '٣' is not a number"),
]


def v(text: str) -> Version:
    return parse_version(text)


def fmt(sets: tuple[tuple[Comparator, ...], ...]) -> str:
    return "||".join(" ".join(map(str, s)) for s in sets) or "*"


# -- table tests --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "version", "why"), INCLUDE)
def test_include(text: str, version: str, why: str) -> None:
    assert Range.parse(text).allows(v(version)), why


@pytest.mark.parametrize(("text", "version", "why"), EXCLUDE)
def test_exclude(text: str, version: str, why: str) -> None:
    assert not Range.parse(text).allows(v(version)), why


@pytest.mark.parametrize(("text", "version", "why"), INCLUDE_PRE)
def test_include_prerelease(text: str, version: str, why: str) -> None:
    assert Range.parse(text).allows(v(version), include_prerelease=True), why


@pytest.mark.parametrize(("text", "version", "why"), EXCLUDE_PRE)
def test_exclude_prerelease(text: str, version: str, why: str) -> None:
    assert not Range.parse(text).allows(v(version), include_prerelease=True), why


@pytest.mark.parametrize(("text", "version", "why"), INCLUDE)
def test_include_prerelease_widens(text: str, version: str, why: str) -> None:
    # include_prerelease only ever adds versions on these fixtures
    assert Range.parse(text).allows(v(version), include_prerelease=True), why


@pytest.mark.parametrize(("text", "normalized", "why"), PARSE)
def test_parse_normalizes(text: str, normalized: str, why: str) -> None:
    rng = Range.parse(text)
    assert str(rng) == normalized, why
    assert rng.raw == text
    assert str(Range.parse(normalized)) == normalized, "the normalized form is a fixed point"


@pytest.mark.parametrize(("text", "normalized", "why"), PARSE_PRE)
def test_parse_include_prerelease_desugaring(text: str, normalized: str, why: str) -> None:
    assert fmt(Range.parse(text).prerelease_sets) == normalized, why


@pytest.mark.parametrize(("text", "fragment"), INVALID_RANGES)
def test_invalid_range(text: str, fragment: str) -> None:
    with pytest.raises(RangeError) as info:
        Range.parse(text)
    assert info.value.text == text
    assert fragment in info.value.reason
    assert repr(text) in str(info.value)


@pytest.mark.parametrize(("text", "expected"), VALID_VERSIONS)
def test_parse_version(text: str, expected: Version) -> None:
    parsed = parse_version(text)
    assert parsed == expected
    assert parsed.build == expected.build
    assert str(parsed) == text


@pytest.mark.parametrize(("text", "fragment"), INVALID_VERSIONS)
def test_invalid_version(text: str, fragment: str) -> None:
    with pytest.raises(VersionError) as info:
        parse_version(text)
    assert info.value.text == text
    assert fragment in info.value.reason
    assert repr(text) in str(info.value)


def test_non_string_inputs_raise_user_errors() -> None:
    with pytest.raises(RangeError, match="expected a string, got float"):
        Range.parse(1.0)  # type: ignore[arg-type]
    with pytest.raises(VersionError, match="expected a string, got int"):
        parse_version(1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "pinned"),
    [
        ("1.2.3", "1.2.3"),
        ("=1.2.3", "1.2.3"),
        ("v1.2.3", "1.2.3"),
        ("1.2.3+build", "1.2.3"),
        ("1.2.3-beta.1", "1.2.3-beta.1"),
        (">=1.2.3 <=1.2.3", "1.2.3"),
        ("1.2.3 || =1.2.3", "1.2.3"),
        ("^1.2.3 1.2.4", "1.2.4"),
        ("1.2.x", None),
        ("^1.2.3", None),
        ("1.2.3 || 1.2.4", None),
        ("1.2.3 - 1.2.3", None),  # with include_prerelease it is >=1.2.3-0 <1.2.4-0
        ("1.2.3 2.0.0", None),  # allows nothing
        ("*", None),
        ("<x", None),
    ],
)
def test_exact(text: str, pinned: str | None) -> None:
    assert Range.parse(text).exact == (None if pinned is None else v(pinned))


def test_value_semantics() -> None:
    caret = Range.parse("^1.2.3")
    spelled = Range.parse(">=1.2.3   <2.0.0-0")
    assert caret == spelled
    assert hash(caret) == hash(spelled)
    assert caret.raw != spelled.raw
    # same default desugaring, different include_prerelease desugaring: not equal
    assert Range.parse("1.x") != Range.parse(">=1.0.0 <2.0.0-0")
    assert len({Range.parse("~1.2"), Range.parse("1.2.x"), Range.parse(">=1.2.0 <1.3.0-0")}) == 2
    with pytest.raises(AttributeError):
        caret.raw = "x"  # type: ignore[misc]
    assert repr(caret) == "<Range '>=1.2.3 <2.0.0-0' raw='^1.2.3'>"


def test_comparator_value_type() -> None:
    c = Comparator(">=", Version(1, 2, 3, "beta", "build.5"))
    assert c.version.build is None, "build metadata is dropped"
    assert c == Comparator(">=", Version(1, 2, 3, "beta"))
    assert hash(c) == hash(Comparator(">=", Version(1, 2, 3, "beta")))
    assert str(c) == ">=1.2.3-beta"
    assert str(Comparator("=", Version(1, 2, 3))) == "1.2.3"
    assert not hasattr(c, "__dict__")
    with pytest.raises(AttributeError):
        c.op = "<"  # type: ignore[misc]
    with pytest.raises(ValueError, match="operator"):
        Comparator("~", Version(1, 2, 3))  # type: ignore[arg-type]
    assert c.allows(v("1.2.3-beta+other")) and not c.allows(v("1.2.3-alpha"))


def test_build_metadata_is_ignored_by_allows() -> None:
    assert Range.parse("1.2.3").allows(v("1.2.3+build.7"))
    assert Range.parse("<=1.2.3+zzz").allows(v("1.2.3+aaa"))
    assert not Range.parse("<1.2.3+zzz").allows(v("1.2.3+aaa"))


def test_node_semver_drops_gte_0_0_0_when_parsing() -> None:
    # `>=0.0.0` is read as `*`, so here the set is just `<=0.0.0-beta`, which opens 0.0.0
    rng = Range.parse(">=0.0.0 <=0.0.0-beta")
    assert str(rng) == "<=0.0.0-beta"
    assert rng.allows(v("0.0.0-alpha"))
    assert not rng.allows(v("0.0.0-alpha"), include_prerelease=True), "see EXCLUDE_PRE"
    # intersect() is exact instead: `>=0.0.0` shuts 0.0.0 prereleases out
    both = Range.parse(">=0.0.0-0").intersect(Range.parse(">=0.0.0-0 <1.0.0-0"))
    assert (
        not Range.parse(">=0.0.0").intersect(Range.parse("<=0.0.0-beta")).allows(v("0.0.0-alpha"))
    )
    assert both.allows(v("0.0.0-alpha"))


def test_prerelease_rule_is_per_set() -> None:
    rng = Range.parse(">=1.2.3-alpha <1.3.0 || >=2.0.0")
    assert rng.allows(v("1.2.3-beta")), "opened by the first set"
    assert not rng.allows(v("1.2.4-beta")), "other core: not opened"
    assert not rng.allows(v("2.0.1-beta")), "second set opens nothing"
    assert rng.allows(v("2.0.1-beta"), include_prerelease=True)


def test_adding_a_prerelease_comparator_can_widen() -> None:
    # npm's rule, not a bug: the added comparator opens 1.2.3 prereleases
    assert not Range.parse("<=1.2.3").allows(v("1.2.3-beta"))
    assert Range.parse("<=1.2.3 >=1.2.3-alpha").allows(v("1.2.3-beta"))


VERSIONS = [
    v(t) for t in ("1.2.3", "1.2.4-beta", "1.3.0", "1.3.0+b", "2.0.0-rc.1", "2.0.0", "0.9.0")
]


@pytest.mark.parametrize(
    ("text", "include_prerelease", "best", "matches"),
    [
        ("^1.2", False, "1.3.0", ["1.2.3", "1.3.0", "1.3.0+b"]),
        ("^1.2", True, "1.3.0", ["1.2.3", "1.2.4-beta", "1.3.0", "1.3.0+b"]),
        ("^1.2.4-alpha", False, "1.3.0", ["1.2.4-beta", "1.3.0", "1.3.0+b"]),
        ("*", False, "2.0.0", ["1.2.3", "1.3.0", "1.3.0+b", "2.0.0", "0.9.0"]),
        (
            "<2.0.0",
            True,
            "2.0.0-rc.1",
            ["1.2.3", "1.2.4-beta", "1.3.0", "1.3.0+b", "2.0.0-rc.1", "0.9.0"],
        ),
        (">=2.0.0-0", False, "2.0.0", ["2.0.0-rc.1", "2.0.0"]),
        ("3", False, None, []),
    ],
)
def test_satisfying_and_max(
    text: str, include_prerelease: bool, best: str | None, matches: list[str]
) -> None:
    rng = Range.parse(text)
    got = satisfying(VERSIONS, rng, include_prerelease=include_prerelease)
    assert [str(x) for x in got] == matches, "in the given order"
    top = max_satisfying(VERSIONS, rng, include_prerelease=include_prerelease)
    assert (None if top is None else str(top)) == best, "first of equal precedences wins"


@pytest.mark.parametrize(
    ("a", "b", "version", "expected", "why"),
    [
        ("^1.2.3", "~1.4", "1.4.5", True, "inside both"),
        ("^1.2.3", "~1.4", "1.5.0", False, "outside the tilde"),
        (">=1.2.3-alpha", "<2.0.0", "1.2.3-beta", False, "only one side opens 1.2.3"),
        (">=1.2.3-alpha", "<=1.2.3-rc", "1.2.3-beta", True, "both sides open 1.2.3"),
        ("*", "1.2.3-beta", "1.2.3-beta", False, "* opens no prerelease"),
        ("1.x || 3.x", "^1.5 || >=3.1", "3.0.5", False, "the cross product excludes 3.0.x"),
        ("1.x || 3.x", "^1.5 || >=3.1", "3.1.0", True, "the cross product keeps 3.1+"),
    ],
)
def test_intersect_examples(a: str, b: str, version: str, expected: bool, why: str) -> None:
    got = Range.parse(a).intersect(Range.parse(b))
    assert got.allows(v(version)) is expected, why
    assert Range.parse(str(got)).allows(v(version)) is expected, "string round trip"


def test_union_keeps_prereleases_that_star_would_swallow() -> None:
    got = Range.parse("*").union(Range.parse("1.2.3-beta"))
    assert got.allows(v("1.2.3-beta")) and got.allows(v("7.0.0"))
    assert not got.allows(v("1.2.3-alpha"))
    assert Range.parse(str(got)).allows(v("1.2.3-beta"))
    assert not Range.parse("* || 1.2.3-beta").allows(v("1.2.3-beta")), "node-semver's parse"
    assert str(Range.parse("*").union(Range.parse("^1"))) == "*"


# -- properties ---------------------------------------------------------------------------------

PRERELEASES = ["alpha", "beta", "0", "1", "alpha.1", "beta.2"]
component = st.integers(min_value=0, max_value=3)
versions = st.builds(
    Version,
    component,
    component,
    component,
    st.one_of(st.none(), st.none(), st.sampled_from(PRERELEASES)),
)


@st.composite
def partials(draw: st.DrawFn, *, prerelease: bool = True) -> str:
    """``MAJOR[.MINOR[.PATCH[-PRE]]]`` with x/* wildcards or missing parts after the numbers."""
    numbers = [str(draw(component)) for _ in range(draw(st.integers(0, 3)))]
    wild = draw(st.lists(st.sampled_from(["x", "X", "*"]), max_size=3 - len(numbers)))
    text = ".".join(numbers + wild) or draw(st.sampled_from(["*", "x", ""]))
    if len(numbers) == 3 and prerelease and draw(st.booleans()):
        text += "-" + draw(st.sampled_from(PRERELEASES))
    return text


@st.composite
def terms(draw: st.DrawFn, *, prerelease: bool = True, hyphen: bool = True) -> str:
    if hyphen and draw(st.integers(0, 9)) == 0:
        low, high = draw(partials(prerelease=prerelease)), draw(partials(prerelease=prerelease))
        return f"{low or '*'} - {high or '*'}"
    op = draw(st.sampled_from(["", "=", "<", "<=", ">", ">=", "~", "~>", "^"]))
    return op + (draw(partials(prerelease=prerelease)) or "*")


@st.composite
def alternatives(draw: st.DrawFn, *, prerelease: bool = True, hyphen: bool = True) -> list[str]:
    return draw(
        st.lists(
            st.lists(terms(prerelease=prerelease, hyphen=False), min_size=1, max_size=3).map(
                " ".join
            )
            | terms(prerelease=prerelease, hyphen=hyphen),
            min_size=1,
            max_size=3,
        )
    )


ranges = alternatives().map(" || ".join).map(Range.parse)
modes = st.booleans()


@given(alternatives(hyphen=False), terms(prerelease=False, hyphen=False), versions)
def test_adding_a_release_comparator_narrows(alts: list[str], extra: str, version: Version) -> None:
    original = Range.parse(" || ".join(alts))
    narrowed = Range.parse(" || ".join(f"{alt} {extra}" for alt in alts))
    # node-semver lets a `*` alternative swallow the others (prereleases they open included):
    # adding a comparator to that `*` can bring them back, so leave such ranges out.
    assume(all(Range.parse(alt).sets != ((),) for alt in alts))
    if narrowed.allows(version):
        assert original.allows(version)


@given(alternatives(hyphen=False), terms(hyphen=False), versions)
def test_adding_a_comparator_narrows_with_include_prerelease(
    alts: list[str], extra: str, version: Version
) -> None:
    original = Range.parse(" || ".join(alts))
    narrowed = Range.parse(" || ".join(f"{alt} {extra}" for alt in alts))
    if narrowed.allows(version, include_prerelease=True):
        assert original.allows(version, include_prerelease=True)


@settings(max_examples=300)
@given(ranges, ranges, versions, modes)
def test_intersect_is_and(a: Range, b: Range, version: Version, mode: bool) -> None:
    both = a.allows(version, include_prerelease=mode) and b.allows(version, include_prerelease=mode)
    assert a.intersect(b).allows(version, include_prerelease=mode) == both
    assert b.intersect(a).allows(version, include_prerelease=mode) == both, "commutative"


@settings(max_examples=300)
@given(ranges, ranges, versions, modes)
def test_union_is_or(a: Range, b: Range, version: Version, mode: bool) -> None:
    either = a.allows(version, include_prerelease=mode) or b.allows(
        version, include_prerelease=mode
    )
    assert a.union(b).allows(version, include_prerelease=mode) == either
    assert b.union(a).allows(version, include_prerelease=mode) == either, "commutative"


@given(ranges, ranges, st.sampled_from(["parse", "intersect", "union"]), versions)
def test_string_round_trip(a: Range, b: Range, how: str, version: Version) -> None:
    rng = {"parse": a, "intersect": a.intersect(b), "union": a.union(b)}[how]
    again = Range.parse(str(rng))
    assert again.allows(version) == rng.allows(version)
    assert str(again) == str(rng), "the normalized form is a fixed point"


@given(ranges, st.lists(versions, max_size=8), modes)
def test_max_satisfying_is_the_max_of_satisfying(rng: Range, vs: list[Version], mode: bool) -> None:
    matching = satisfying(vs, rng, include_prerelease=mode)
    assert matching == [x for x in vs if rng.allows(x, include_prerelease=mode)]
    top = max_satisfying(vs, rng, include_prerelease=mode)
    assert top == (max(matching) if matching else None)


pins = st.one_of(
    versions.map(str),
    versions.map(lambda x: f"={x}"),
    versions.map(lambda x: f"v{x}"),
    versions.map(lambda x: f">={x} <={x}"),
    versions.map(lambda x: f"^{x} {x}"),
)


@given(st.one_of(ranges, pins.map(Range.parse)), versions)
def test_exact_pins_one_version(rng: Range, version: Version) -> None:
    pinned = rng.exact
    if pinned is None:
        return
    for mode in (False, True):
        assert rng.allows(pinned, include_prerelease=mode)
        assert rng.allows(version, include_prerelease=mode) == (version.compare(pinned) == 0)


@given(versions)
def test_exact_of_a_pin(version: Version) -> None:
    for text in (str(version), f"={version}", f"v{version}+build", f"^{version} {version}"):
        assert Range.parse(text).exact == version
    # node-semver reads `>=0.0.0` (`>=0.0.0-0` with include_prerelease) as `*`, leaving
    # `<=0.0.0`: exact stays conservative there
    interval = Range.parse(f">={version} <={version}").exact
    assert interval == (None if str(version) in ("0.0.0", "0.0.0-0") else version)


_IDENT = st.one_of(
    st.integers(0, 30).map(str), st.sampled_from(["alpha", "beta", "rc", "x-1", "0a", "B"])
)
_TAIL = st.one_of(st.none(), st.lists(_IDENT, min_size=1, max_size=3).map(".".join))


@settings(max_examples=400, deadline=None)
@given(
    a=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), _TAIL, _TAIL),
    b=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), _TAIL, _TAIL),
)
def test_a_version_is_the_semver_packages_value(
    a: tuple[int, int, int, str | None, str | None], b: tuple[int, int, int, str | None, str | None]
) -> None:
    """pinbench's ``Version`` (the ``semver`` package is not imported at run time: its command
    line came with it) prints, compares, equals, hashes and bumps as ``semver.Version``."""
    import semver

    ours, theirs = Version(*a), Version(*b)
    ref_a, ref_b = semver.Version(*a), semver.Version(*b)
    assert str(ours) == str(ref_a) and parse_version(str(ours)) == ours
    assert ours.compare(theirs) == ref_a.compare(ref_b)
    assert (ours == theirs) == (ref_a == ref_b) and (ours < theirs) == (ref_a < ref_b)
    assert (hash(ours) == hash(theirs)) or ours != theirs
    assert str(ours.bump_patch()) == str(ref_a.bump_patch())
    assert ours.replace(build=None) == ours and ours.replace(build=None).build is None
