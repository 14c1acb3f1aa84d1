/* Records as text: dump's lines and the rows of heapslope-trace(5)'s
 * table of records, both from the descriptions in records.c. */
#include "records.h"

#include <inttypes.h>
#include <string.h>

#include "reader.h"

void hs_print_str(FILE *out, const char *s, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static const char *enum_name(const struct hs_field *f, uint64_t v)
{
	for (uint64_t i = 0; f->names[i]; i++)
		if (i == v)
			return f->names[i];
	return "?";
}

static void print_scalar(FILE *o, const struct hs_field *f, const void *base)
{
	uint64_t v = hs_field_get(base, f);
	switch (f->print) {
	case HS_P_DEC:
		fprintf(o, " %s=%" PRIu64, f->name, v);
		break;
	case HS_P_HEXNZ:
		if (!v)
			break;
		/* fall through */
	case HS_P_HEX:
		fprintf(o, " %s=0x%" PRIx64, f->name, v);
		break;
	case HS_P_ENUM:
		fprintf(o, " %s=%s", f->name, enum_name(f, v));
		break;
	case HS_P_BARE:
		fprintf(o, " %" PRIu64, v);
		break;
	default:
		break;
	}
}

static void print_field(FILE *o, const struct hs_field *f,
			const struct hs_record *r)
{
	switch (f->type) {
	case HS_F_STR: {
		const char *s;
		size_t n = hs_field_str(r, f, &s);
		if (f->print == HS_P_STR) {
			fprintf(o, " %s=", f->name);
			hs_print_str(o, s, n);
		} else if (f->print == HS_P_BYTES) {
			fprintf(o, " %s=", f->name);
			for (size_t i = 0; i < n; i++)
				fprintf(o, "%02x", (unsigned char)s[i]);
		}
		break;
	}
	case HS_F_FLAGS: { /* the groups present, in place */
		uint64_t bits = hs_field_get(r, f);
		const struct hs_field *g = f + 1;
		for (unsigned b = 0; b < f->group; b++) {
			for (unsigned j = 0; j < f->sizes[b]; j++)
				if (bits >> b & 1)
					print_scalar(o, &g[j], r);
			g += f->sizes[b];
		}
		break;
	}
	case HS_F_COUNT: {
		const uint8_t *arr = (const uint8_t *)r + f->at;
		unsigned n = hs_field_count(r, f);
		for (unsigned k = 0; k < n; k++) {
			const uint8_t *el = arr + k * f->stride;
			if (f->print == HS_P_SEG) {
				const struct hs_segment *s = (const void *)el;
				fprintf(o, " seg=0x%" PRIx64 "+0x%" PRIx64
					":%c%c%c", s->vaddr, s->memsz,
					s->flags & 4 ? 'r' : '-',
					s->flags & 2 ? 'w' : '-',
					s->flags & 1 ? 'x' : '-');
			} else {
				for (unsigned j = 0; j < f->group; j++)
					print_scalar(o, &f[1 + j], el);
			}
		}
		break;
	}
	default:
		print_scalar(o, f, r);
	}
}

/* The top-level fields in stored order: index i of the description's
 * fields, skipping the members of groups. */
static unsigned top_fields(const struct hs_rec_desc *d, const struct hs_field *
			   *out)
{
	unsigned n = 0;
	for (unsigned i = 0; i < d->nfields; i++) {
		const struct hs_field *f = &d->f[i];
		out[n++] = f;
		if (f->type == HS_F_COUNT)
			i += f->group;
		else if (f->type == HS_F_FLAGS)
			for (unsigned b = 0; b < f->group; b++)
				i += f->sizes[b];
	}
	return n;
}

/* A record's word: its title, or for an event its function ("malloc",
 * "realloc-free" for a realloc that freed; "failed malloc"). */
static void print_word(FILE *o, const struct hs_rec_desc *d,
		       const struct hs_record *r)
{
	if (!d->with_fn) {
		fputs(d->title, o);
		return;
	}
	if (r->kind == HS_REC_FAIL)
		fputs("failed ", o);
	if (r->kind == HS_REC_FREE &&
	    (r->fn == HS_FN_REALLOC || r->fn == HS_FN_REALLOCARRAY))
		fputs("realloc-free", o);
	else
		fputs(hs_fn_name(r->fn), o);
}

void hs_rec_print(FILE *o, const struct hs_record *r)
{
	const struct hs_rec_desc *d = hs_rec_desc(r->tag);
	const struct hs_field *top[HS_FIELDS_MAX];
	if (!d) {
		fprintf(o, "record 0x%02x", r->tag);
		return;
	}
	if (d->kind == HS_REC_EXT) { /* a known one by its own fields */
		const struct hs_rec_desc *e = hs_ext_desc(r->ext_type);
		if (!e) {
			fprintf(o, "ext type=%" PRIu64 " bytes=%zu",
				r->ext_type, r->ext_len);
			return;
		}
		d = e;
	}
	print_word(o, d, r);
	if (d == hs_rec_desc(HS_REC_MARK)) { /* "batch", or the label */
		if (r->mark_kind == HS_MARK_BATCH) {
			fputs(" batch", o);
		} else {
			fputs(" label=", o);
			hs_print_str(o, r->str, r->str_len);
		}
		return;
	}
	unsigned n = top_fields(d, top);
	for (unsigned i = 0; i < n; i++) {
		unsigned k = d->print_order[0] == 0xff ? i : d->print_order[i];
		if (k == 0xff)
			break;
		print_field(o, top[k], r);
	}
}

static void layout_fields(FILE *o, const struct hs_rec_desc *d);

static void layout_field(FILE *o, const struct hs_field *f)
{
	fputs(f->name, o);
	if (f->type == HS_F_PTR || f->type == HS_F_TIME)
		fputs(" (signed)", o);
	else if (f->type == HS_F_STR)
		fputs(" (string)", o);
}

void hs_rec_layout(FILE *o, const struct hs_rec_desc *d)
{
	fprintf(o, d->with_fn ? "0x%02x+F\t%s\t" : "0x%02x\t%s\t", d->kind,
		d->title);
	layout_fields(o, d);
}

void hs_ext_layout(FILE *o, const struct hs_rec_desc *d)
{
	fprintf(o, "%u\t%s\t", d->kind, d->title);
	if (!d->nfields)
		fputs("(none)", o);
	layout_fields(o, d);
}

static void layout_fields(FILE *o, const struct hs_rec_desc *d)
{
	for (unsigned i = 0; i < d->nfields; i++) {
		const struct hs_field *f = &d->f[i];
		if (i)
			fputs(", ", o);
		if (f->type == HS_F_COUNT) {
			fprintf(o, "n%s, n%s \\(mu ", f->name, f->name);
			for (unsigned j = 1; j <= f->group; j++) {
				fputs(j == 1 && f->group > 1 ? "(" : "", o);
				layout_field(o, &f[j]);
				fputs(j < f->group ? ", " : f->group > 1 ? ")"
									 : "",
				      o);
			}
			i += f->group;
		} else if (f->type == HS_F_FLAGS) {
			const struct hs_field *g = f + 1;
			layout_field(o, f);
			for (unsigned b = 0; b < f->group; b++) {
				fputs(", [", o);
				for (unsigned j = 0; j < f->sizes[b]; j++) {
					fputs(j ? ", " : "", o);
					layout_field(o, &g[j]);
				}
				fprintf(o, "] if %s bit %u", f->name, b);
				g += f->sizes[b];
			}
			fprintf(o, ", one value per further bit");
			i += (unsigned)(g - (f + 1));
		} else {
			layout_field(o, f);
		}
	}
	fputc('\n', o);
}
