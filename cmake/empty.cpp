// libattnjit.so's own translation unit; the code comes from the attnjit_capi stage.
