int helper(int);
extern "C" int answer(void);
