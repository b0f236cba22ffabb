double square(double s);
double circle(double r);
double tri(double b, double h);
