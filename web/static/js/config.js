// Configuration: the YAML is rendered by the server; nothing to fetch.
"use strict";

K.start(async () => {});
