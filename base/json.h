// base/json.h: the JSON parser the configuration is read with (base/config.c): the system's cJSON
// (Debian libcjson-dev), or, in a build without a cJSON library (the web build for wasm32, which
// defines JSON_OWN), base/json_own.c, written here with the part of cJSON 1.7.15's interface and
// semantics that base/config.c uses (tests/json_check.c compares the two on every config).
#ifndef BASE_JSON_H
#define BASE_JSON_H

#ifdef JSON_OWN
#include "base/json_own.h"
#else
#include <cjson/cJSON.h>
#endif

#endif
