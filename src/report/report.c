#include "report.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "writers.h"

static const struct report_format formats[] = {
	{ "text", text_write, compare_write },
	{ "json", json_write, json_write_many },
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

const struct report_format *report_formats(size_t *n)
{
	*n = NFORMATS;
	return formats;
}

const struct report_format *report_format(const char *name)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (!strcmp(formats[i].name, name))
			return &formats[i];
	return NULL;
}

const char *report_format_names(void)
{
	static char names[128];
	if (!names[0])
		for (size_t i = 0; i < NFORMATS; i++)
			snprintf(names + strlen(names),
				 sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", formats[i].name);
	return names;
}

int report_write(const struct report_format *f, struct analysis *const *v,
		 size_t n, const char *path, const struct report_opts *o)
{
	const int to_stdout = !strcmp(path, "-");
	if (n != 1 && !f->many)
		return hs_error("--format %s: one trace at a time", f->name);
	FILE *out = to_stdout ? stdout : fopen(path, "w");
	if (!out)
		return hs_error("cannot create %s: %s", path, strerror(errno));
	struct report_opts wo = *o;
	wo.dest = to_stdout ? "stdout" : path;
	int rc = n == 1 ? f->one(out, v[0], &wo) : f->many(out, v, n, &wo);
	if (!to_stdout && fclose(out) != 0 && rc == 0)
		rc = hs_error("cannot write %s: %s", path, strerror(errno));
	return rc;
}
