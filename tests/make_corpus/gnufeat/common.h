int common_value(void);
