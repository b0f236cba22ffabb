long count_lines(const char *s);
